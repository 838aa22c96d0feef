"""REST endpoints for agents and runs. Thin: parse, call a service, serialise."""

from __future__ import annotations

from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from hitl import services as hitl_services
from hitl.models import AgentInterrupt
from runs import registry, services
from runs.models import AgentRun
from runs.serializers import (
    AgentSerializer,
    ResumeSerializer,
    RunCreateSerializer,
    RunSerializer,
)


class AgentListView(APIView):
    @extend_schema(responses=AgentSerializer(many=True))
    def get(self, request: Request) -> Response:
        data = [{"name": a.name, "version": a.version, "description": a.description,
                 "input_schema": a.input_schema()} for a in registry.all_agents()]
        return Response(AgentSerializer(data, many=True).data)


class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = RunSerializer

    def get_queryset(self):
        qs = (AgentRun.objects.filter(owner=self.request.user)
              .select_related("owner")
              .prefetch_related(Prefetch("interrupts", queryset=AgentInterrupt.objects
                                         .select_related("decided_by"))))
        for field in ("status", "agent"):
            value = self.request.query_params.get(field)
            if value:
                qs = qs.filter(**{field: value})
        return qs

    def _fresh(self, run: AgentRun) -> Response:
        return RunSerializer(self.get_queryset().get(pk=run.pk)).data

    @extend_schema(request=RunCreateSerializer, responses={201: RunSerializer})
    def create(self, request: Request) -> Response:
        body = RunCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        run = services.run_start(owner=request.user, agent=data["agent"], input=data["input"],
                                 message=data["message"],
                                 thread_id=str(data["thread_id"]) if data.get("thread_id")
                                 else None)
        return Response(self._fresh(run), status=status.HTTP_201_CREATED)

    @extend_schema(request=ResumeSerializer, responses={202: RunSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        body = ResumeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if "resume" in data:
            entries = [hitl_services.ResumeEntry(**entry) for entry in data["resume"]]
        else:
            entries = [hitl_services.ResumeEntry(interrupt_id=data["interrupt_id"],
                                                 payload=data["payload"])]
        run = hitl_services.decisions_submit(actor=request.user, run_id=pk, entries=entries)
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: RunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        run = services.run_cancel(actor=request.user, run_id=pk)
        return Response(self._fresh(run))

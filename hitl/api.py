"""REST endpoints for interrupts: what a user may decide, and the decision itself."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from hitl import services
from runs.serializers import DecisionSerializer, InterruptSerializer, RunSerializer


class InterruptViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                       viewsets.GenericViewSet):
    serializer_class = InterruptSerializer

    def get_queryset(self):
        qs = services.decidable_interrupts(self.request.user).select_related("run", "decided_by")
        wanted = self.request.query_params.get("status")
        if wanted:
            qs = qs.filter(status=wanted)
        return qs.order_by("created_at", "id")

    @extend_schema(request=DecisionSerializer, responses={202: RunSerializer})
    @action(detail=True, methods=["post"])
    def decision(self, request: Request, pk: str) -> Response:
        interrupt = self.get_object()
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        run = services.decision_submit(actor=request.user, run_id=interrupt.run_id,
                                       interrupt_id=interrupt.interrupt_id,
                                       payload=body.validated_data["payload"],
                                       status=body.validated_data["status"])
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

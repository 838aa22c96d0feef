"""REST endpoints for interrupts: what a user may decide, and the decision itself."""

from __future__ import annotations

from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from agentsite.api_docs import IDEMPOTENCY_KEY, errors
from agentsite.idempotency import idempotent
from agentsite.token_auth import Scope
from api.params import choice_param
from api.serializers import DecisionSerializer, InterruptSerializer, RunSerializer
from execution.lifecycle import interrupts_answer
from hitl.decide import Answer
from hitl.models import AgentInterrupt
from hitl.selectors import decidable_interrupts


@extend_schema_view(
    list=extend_schema(
        parameters=[OpenApiParameter("status", str, enum=list(AgentInterrupt.Status.values)),
                    OpenApiParameter("assigned_to", str, enum=["me"],
                                     description="only interrupts assigned to you "
                                                 "(by name or through a group)")],
        responses={200: InterruptSerializer(many=True), **errors(400, 401, 404)}),
    retrieve=extend_schema(responses={200: InterruptSerializer, **errors(401, 404)}),
)
class InterruptViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                       viewsets.GenericViewSet):
    serializer_class = InterruptSerializer
    token_scopes = {"decision": Scope.ANSWER}  # agentsite.token_auth.TokenScope
    queryset = AgentInterrupt.objects.none()  # for the schema; get_queryset scopes to the user

    def get_queryset(self):
        qs = (decidable_interrupts(self.request.user).select_related("run", "decided_by")
              .prefetch_related("assignees", "assigned_groups", "votes"))
        if self.action == "list":
            wanted = choice_param(self.request, "status", list(AgentInterrupt.Status.values))
            if wanted:
                qs = qs.filter(status=wanted)
            if choice_param(self.request, "assigned_to", ["me"]):
                # Assigned to this user by name or through one of their groups.
                user = self.request.user
                # A subquery, not DISTINCT over the joins: ``request`` is a json column
                # (agentsite.fields.VerbatimJSONField), which has no equality operator.
                qs = qs.filter(pk__in=AgentInterrupt.objects.filter(
                    Q(assignees=user) | Q(assigned_groups__in=user.groups.all())).values("pk"))
        return qs.order_by("created_at", "id")

    @extend_schema(request=DecisionSerializer, parameters=[IDEMPOTENCY_KEY],
                   responses={202: RunSerializer,
                              **errors(400, 401, 403, 404, 409, 410, 415, 422)})
    @action(detail=True, methods=["post"])
    @idempotent
    def decision(self, request: Request, pk: str) -> Response:
        interrupt = self.get_object()
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        answered = interrupts_answer(
            actor=request.user, run_id=interrupt.run_id, surface="api",
            answers=[Answer(interrupt_id=interrupt.interrupt_id,
                            payload=body.validated_data["payload"],
                            status=body.validated_data["status"])])
        return Response(RunSerializer(answered.run).data, status=status.HTTP_202_ACCEPTED)

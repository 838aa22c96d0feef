"""REST endpoints for agents, runs and conversations. Thin: parse, call a service, serialise."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agentsite.api_docs import IDEMPOTENCY_KEY, ErrorSerializer, errors
from agentsite.idempotency import idempotent
from agentsite.request_transaction import request_transaction
from agentsite.token_auth import Scope
from api.params import choice_param
from api.serializers import (
    AgentSerializer,
    ConversationMessagesSerializer,
    ConversationSerializer,
    InterruptSerializer,
    MessageSerializer,
    ResumeSerializer,
    RunCreateSerializer,
    RunSerializer,
)
from execution.lifecycle import interrupts_answer, run_cancel, run_retry
from hitl.decide import Answer
from hitl.models import AgentInterrupt
from hitl.selectors import pending_interrupts, visible_conversations, visible_runs
from runs import registry
from runs.models import AgentRun, Conversation, SegmentUsage
from runs.services import run_start


class AgentListView(APIView):
    @extend_schema(responses={200: AgentSerializer(many=True), **errors(401)})
    def get(self, request: Request) -> Response:
        model = registry.model_name()  # which chat model serves the agents (UI shows it)
        data = [{"name": a.name, "version": a.version, "description": a.description,
                 "input_schema": a.input_schema(), "model": model,
                 "offline_model": model == registry.OFFLINE_MODEL}
                for a in registry.all_agents()]
        return Response(AgentSerializer(data, many=True).data)


def _with_details(runs: QuerySet[AgentRun]) -> QuerySet[AgentRun]:
    # What RunSerializer reads: the owner's name and the interrupts (the pending ones), as
    # ``interrupt_rows``: the attribute the services set on a run they return.
    # The run's token usage per segment, as ``usage_rows`` (RunSerializer.get_usage).
    return runs.select_related("owner").prefetch_related(
        Prefetch("interrupts", queryset=AgentInterrupt.objects.select_related("decided_by"),
                 to_attr="interrupt_rows"),
        Prefetch("usage", queryset=SegmentUsage.objects.order_by("id"), to_attr="usage_rows"))


RETRY_CONFLICT = OpenApiResponse(ErrorSerializer, description=(
    "conflict; `code` is run_not_failed (only a failed run is retried: it is not failed, "
    "e.g. already retried by someone else), thread_moved_on (a later run exists on the "
    "thread), or idempotency_in_progress"))


@extend_schema_view(
    list=extend_schema(parameters=[
        OpenApiParameter("status", str, enum=list(AgentRun.Status.values)),
        OpenApiParameter("agent", str)], responses={200: RunSerializer(many=True),
                                                    **errors(400, 401, 404)}),
    retrieve=extend_schema(responses={200: RunSerializer, **errors(401, 404)}),
)
class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = RunSerializer
    queryset = AgentRun.objects.none()  # for the schema; get_queryset scopes to the user
    # What an API token needs besides ``read`` (agentsite.token_auth.TokenScope).
    token_scopes = {"create": Scope.START, "resume": Scope.ANSWER, "cancel": Scope.ANSWER,
                    "retry": Scope.ANSWER}

    def dispatch(self, request, *args, **kwargs):
        # A write is one transaction, authentication included (the token's lookup): the
        # services join it (agentsite.request_transaction).
        if request.method != "POST":
            return super().dispatch(request, *args, **kwargs)
        with request_transaction():
            return super().dispatch(request, *args, **kwargs)

    def get_queryset(self):
        qs = _with_details(self._runs())
        if self.action == "list":
            wanted = choice_param(self.request, "status", list(AgentRun.Status.values))
            if wanted:
                qs = qs.filter(status=wanted)
            agent = self.request.query_params.get("agent")
            if agent:
                qs = qs.filter(agent=agent)
        return qs

    def _runs(self):
        # The list is the user's own runs (a reviewer's work list is /api/interrupts/);
        # a run by id is any run the user may see, decide and cancel (hitl.selectors:
        # owner or reviewer, a superuser included), the same set for every action.
        if self.action == "list":
            return AgentRun.objects.filter(owner=self.request.user)
        return visible_runs(self.request.user)

    def _fresh(self, run: AgentRun) -> dict:
        # The service has just let this user act on the run: re-read it as it is now
        # without scoping it again (a reviewer's permission lookup costs queries).
        return RunSerializer(_with_details(AgentRun.objects.all()).get(pk=run.pk)).data

    @extend_schema(request=RunCreateSerializer, parameters=[IDEMPOTENCY_KEY],
                   responses={201: RunSerializer, **errors(400, 401, 403, 404, 409, 415, 422)})
    @idempotent
    def create(self, request: Request) -> Response:
        body = RunCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        thread_id = str(data["thread_id"]) if data.get("thread_id") else None
        run = run_start(owner=request.user, agent=data["agent"], input=data["input"],
                        message=data["message"], thread_id=thread_id, surface="api")
        # As the start committed it (a new run has no questions and no usage yet): no
        # re-read racing the segment that has just started.
        run.interrupt_rows, run.usage_rows = [], []
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=ResumeSerializer, parameters=[IDEMPOTENCY_KEY],
                   responses={202: RunSerializer,
                              **errors(400, 401, 403, 404, 409, 410, 415, 422)})
    @action(detail=True, methods=["post"])
    @idempotent
    def resume(self, request: Request, pk: str) -> Response:
        body = ResumeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if "resume" in data:
            answers = [Answer(**entry) for entry in data["resume"]]
        else:
            answers = [Answer(interrupt_id=data["interrupt_id"], payload=data["payload"])]
        answered = interrupts_answer(actor=request.user, run_id=pk, answers=answers,
                                     surface="api")
        # As the decision committed it (its interrupts come with it): no re-read racing
        # the segment that has just started.
        return Response(RunSerializer(answered.run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: RunSerializer, **errors(401, 403, 404, 409)})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        run = run_cancel(actor=request.user, run_id=pk, surface="api")
        return Response(self._fresh(run))

    @extend_schema(request=None, parameters=[IDEMPOTENCY_KEY], responses={
        200: RunSerializer, **errors(400, 401, 403, 404), 409: RETRY_CONFLICT, **errors(422)},
        description="Retry a failed run (its owner or a reviewer): it goes on from its "
                    "last checkpoint. The run comes back `retrying`, with `retry_at` now; "
                    "a worker takes it up at once. Audited; of concurrent retries of one "
                    "run exactly one succeeds, the others get 409 run_not_failed.")
    @action(detail=True, methods=["post"])
    @idempotent
    def retry(self, request: Request, pk: str) -> Response:
        run = run_retry(actor=request.user, run_id=pk, surface="api")
        # As the retry committed it (``retrying``): no re-read racing the worker that takes
        # it up at once.
        return Response(RunSerializer(run).data)


@extend_schema_view(
    list=extend_schema(parameters=[OpenApiParameter("agent", str)],
                       responses={200: ConversationSerializer(many=True), **errors(401, 404)}),
    retrieve=extend_schema(responses={200: ConversationSerializer, **errors(401, 404)}),
)
class ConversationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                          viewsets.GenericViewSet):
    serializer_class = ConversationSerializer
    queryset = Conversation.objects.none()  # for the schema; get_queryset scopes to the user

    def get_queryset(self):
        # The list is the user's own; one by id, any the user may see (as for runs).
        if self.action != "list":
            return visible_conversations(self.request.user)
        qs = Conversation.objects.filter(owner=self.request.user)
        agent = self.request.query_params.get("agent")
        if agent:
            qs = qs.filter(agent=agent)
        return qs

    @extend_schema(responses={200: ConversationMessagesSerializer, **errors(401, 404)})
    @action(detail=True, methods=["get"])
    def messages(self, request: Request, pk: str) -> Response:
        conversation = self.get_object()
        active = conversation.runs.filter(status__in=AgentRun.ACTIVE).first()
        pending = pending_interrupts(active).first() if active else None
        messages = conversation.messages.all()
        return Response({
            "messages": MessageSerializer(messages, many=True).data,
            "thread_state": {
                "pending_interrupt": InterruptSerializer(pending).data if pending else None,
                "active_run_id": active.id if active else None,
            },
        })

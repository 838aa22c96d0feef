"""REST for "answer differently": see what a fork would start from, and fork.

``GET /api/interrupts/<id>/fork/``: the checkpoint and the tool calls the original run
executed after it (the fork does not undo them). ``POST`` with ``{payload}``: a new run
forked from that checkpoint with the new answer (``execution.fork``).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agentsite.api_docs import IDEMPOTENCY_KEY, errors
from agentsite.idempotency import idempotent
from agentsite.token_auth import Scope
from api.serializers import AnswerField, RunSerializer
from execution.fork import fork_point, interrupt_fork


class ToolCallSerializer(serializers.Serializer):
    name = serializers.CharField()
    args = serializers.JSONField()
    tool_call_id = serializers.CharField()
    result = serializers.CharField(help_text="what the tool returned, as the run recorded it")


class ForkPointSerializer(serializers.Serializer):
    interrupt = serializers.UUIDField(help_text="the answered interrupt (its row id)")
    run = serializers.UUIDField(help_text="the original run")
    interrupt_id = serializers.CharField(help_text="its LangGraph interrupt id")
    checkpoint_id = serializers.CharField(
        help_text="the original thread's checkpoint at which the question was pending")
    tool_calls_after = ToolCallSerializer(many=True, help_text=(
        "tool calls the original run executed after that point: a fork does not undo them"))


class ForkSerializer(serializers.Serializer):
    payload = AnswerField(allow_null=True, help_text=(
        "the new answer, as for `POST /api/interrupts/<id>/decision/`: validated by the "
        "question's format, under its policies (four-eyes, quorum, assignees)"))


class ForkedRunSerializer(serializers.Serializer):
    run = RunSerializer()
    fork_point = ForkPointSerializer()


class InterruptForkView(APIView):
    token_scopes = {"post": Scope.START}  # agentsite.token_auth.TokenScope

    @extend_schema(responses={200: ForkPointSerializer, **errors(401, 403, 404, 409, 410)})
    def get(self, request: Request, pk: str) -> Response:
        point = fork_point(actor=request.user, interrupt_pk=pk)
        return Response(point.as_json())

    @extend_schema(request=ForkSerializer, parameters=[IDEMPOTENCY_KEY],
                   responses={201: ForkedRunSerializer,
                              **errors(400, 401, 403, 404, 409, 410, 415, 422)})
    @idempotent
    def post(self, request: Request, pk: str) -> Response:
        body = ForkSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        forked = interrupt_fork(actor=request.user, interrupt_pk=pk, surface="api",
                                payload=body.validated_data["payload"])
        return Response({"run": RunSerializer(forked.run).data,
                         "fork_point": forked.point.as_json()},
                        status=status.HTTP_201_CREATED)

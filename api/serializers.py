from __future__ import annotations

import copy
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agentsite.limits import check_answer_size
from hitl.formats import FORMATS
from hitl.models import AgentInterrupt
from hitl.policies import tally
from runs.models import AgentRun, SegmentUsage


class FieldsMadeOnce:
    """A ModelSerializer whose fields are made from the model once per class.

    DRF builds a ModelSerializer's fields again for every instance (model introspection,
    field kwargs, validators: 0.35 ms for a run, 0.4 for an interrupt, on each answer);
    here they are built once and each instance gets its own deep copy (fields are bound to
    their serializer, so instances must not share them), as DRF copies declared fields.
    Only for serializers whose fields do not depend on the request or the instance.
    """

    def get_fields(self) -> dict[str, serializers.Field]:
        made = type(self).__dict__.get("_fields_made")
        if made is None:
            made = super().get_fields()  # type: ignore[misc]
            type(self)._fields_made = made
        return copy.deepcopy(made)


FORMATS_HELP = (
    "The interrupt's format (how the graph asked; the decision's `payload` is what that "
    "format's graph code expects, checked against `response_schema`): "
    "input / select / multiSelect / modal / approval / unlock / review (agentsite's hitl_* "
    "helpers: `{\"value\": ...}`, `{\"values\": [...]}`, `{\"action\": ...}`, "
    "`{\"approved\": bool, \"reason\"?}`, `{}`, `{\"decision\": approve|edit|reject|respond, "
    "\"edited\"?, \"reason\"?, \"feedback\"?}`); "
    "hitl_request (LangChain HumanInTheLoopMiddleware, batched: the HITLResponse "
    "`{\"decisions\": [{\"type\": \"approve\"} | {\"type\": \"edit\", \"edited_action\": "
    "{\"name\", \"args\"}} | {\"type\": \"reject\", \"message\"?} | {\"type\": \"respond\", "
    "\"message\"}]}`, one per action request, in order); "
    "tool_approval (the same middleware per call: one such decision); "
    "agent_inbox (LangGraph Agent Inbox: `[{\"type\": accept|edit|response|ignore, "
    "\"args\": null | {\"action\", \"args\"} | text}]`); "
    "schema_form (interrupt(value, response_schema=...): any JSON fitting the schema); "
    "generic (anything else: any JSON value but null, e.g. a string; passed on as it is).")


class InterruptSerializer(FieldsMadeOnce, serializers.ModelSerializer):
    id = serializers.UUIDField(read_only=True)
    run_id = serializers.UUIDField(read_only=True)
    kind = serializers.ChoiceField(choices=[f.name for f in FORMATS], read_only=True,
                                   help_text=FORMATS_HELP)
    reason = serializers.SerializerMethodField()
    message = serializers.CharField(read_only=True)
    request = serializers.JSONField(read_only=True, allow_null=True, help_text=(
        "the value the graph passed to interrupt(), verbatim (any JSON value)"))
    response_schema = serializers.SerializerMethodField(help_text=(
        "JSON Schema of the answer this interrupt takes: the one the graph gave "
        "(interrupt(..., response_schema=...)), else computed from its format"))
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    # Who may decide (hitl policies): with assignees, only they (or an override).
    assignees = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)
    assigned_groups = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    approvals = serializers.SerializerMethodField()

    class Meta:
        model = AgentInterrupt
        fields = ["id", "interrupt_id", "run_id", "kind", "status", "reason", "message",
                  "request", "response_schema", "decision", "decided_by", "decided_at",
                  "applied_at", "expires_at", "created_at", "assignees", "assigned_groups",
                  "requester_may_decide", "required_approvals", "reject_policy",
                  "approvals", "escalated_at"]
        read_only_fields = fields

    @extend_schema_field({"type": "object", "nullable": True, "properties": {
        "approvals": {"type": "integer"}, "rejections": {"type": "integer"},
        "required": {"type": "integer"}, "label": {"type": "string"}}})
    def get_approvals(self, obj: AgentInterrupt) -> dict[str, Any] | None:
        """The quorum's tally ("2 of 3 approvals"); null for a one-person question."""
        if obj.required_approvals <= 1:
            return None
        votes = list(obj.votes.all())
        approvals = sum(1 for v in votes if v.approved)
        return {"approvals": approvals, "rejections": len(votes) - approvals,
                "required": obj.required_approvals,
                "label": tally(obj.required_approvals, approvals)}

    def get_reason(self, obj: AgentInterrupt) -> str:
        return obj.format.reason()

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_response_schema(self, obj: AgentInterrupt) -> dict[str, Any]:
        return obj.format.response_schema()


class SegmentUsageSerializer(FieldsMadeOnce, serializers.ModelSerializer):
    class Meta:
        model = SegmentUsage
        fields = ["segment", "model_name", "calls", "input_tokens", "output_tokens",
                  "total_tokens", "created_at"]
        read_only_fields = fields


class RunSerializer(FieldsMadeOnce, serializers.ModelSerializer):
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
    conversation_id = serializers.UUIDField(read_only=True)
    assistant_message_id = serializers.UUIDField(read_only=True)
    pending_interrupts = serializers.SerializerMethodField()
    status = serializers.ChoiceField(choices=AgentRun.Status.choices, read_only=True, help_text=(
        "retrying: the model provider failed transiently (or someone asked for a retry); "
        "the run goes on from its last checkpoint at `retry_at`"))
    error = serializers.CharField(read_only=True, help_text=(
        "why the run failed (or ended), in plain words for a person"))
    error_detail = serializers.CharField(read_only=True, help_text=(
        "while `retrying` or `failed`: the technical detail of the failure (exception, "
        "provider answer); empty otherwise"))
    retries = serializers.IntegerField(read_only=True, help_text=(
        "automatic retries used, of `retry_budget`"))
    retry_budget = serializers.SerializerMethodField(help_text=(
        "automatic retries a run may use (MODEL_RUN_RETRIES)"))
    retry_at = serializers.DateTimeField(read_only=True, allow_null=True, help_text=(
        "while `retrying`: when the next attempt is due"))
    retry_reason = serializers.CharField(read_only=True, help_text=(
        "while `retrying`: why, in plain words (e.g. \"The model provider is "
        "rate-limiting requests (429)\"); empty otherwise"))
    manual_retries = serializers.IntegerField(read_only=True, help_text=(
        "retries people asked for after the run failed (`POST …/retry/`)"))
    attempt = serializers.IntegerField(read_only=True, help_text=(
        "1 + `manual_retries`: a run that failed again after a retry is on attempt 2 or "
        "more (`finished_at`: when it last ended)"))
    model_name = serializers.CharField(read_only=True, help_text="the chat model that served")
    input_tokens = serializers.IntegerField(read_only=True, help_text="all segments' sum")
    output_tokens = serializers.IntegerField(read_only=True, help_text="all segments' sum")
    total_tokens = serializers.IntegerField(read_only=True, help_text="all segments' sum")
    usage = serializers.SerializerMethodField(help_text=(
        "tokens per segment attempt that called a model, oldest first"))
    forked_from = serializers.UUIDField(source="forked_from_id", read_only=True,
                                        allow_null=True, help_text=(
        "a fork (`POST /api/interrupts/<id>/fork/`): the run it was forked from"))
    fork_interrupt_ref = serializers.CharField(read_only=True, help_text=(
        "a fork: the LangGraph id of the question it answered differently"))
    fork_checkpoint_id = serializers.CharField(read_only=True, help_text=(
        "a fork: the original thread's checkpoint its thread started from"))

    class Meta:
        model = AgentRun
        fields = ["id", "agent", "agent_version", "thread_id", "conversation_id", "owner",
                  "status", "input", "result", "error", "error_detail", "pending_interrupts",
                  "assistant_message_id", "segments", "retries", "retry_budget", "retry_at",
                  "retry_reason", "manual_retries", "attempt", "model_name", "input_tokens",
                  "output_tokens", "total_tokens", "usage", "created_at", "updated_at",
                  "finished_at", "forked_from", "fork_interrupt_ref", "fork_checkpoint_id"]
        read_only_fields = fields

    def get_retry_budget(self, obj: AgentRun) -> int:
        return settings.MODEL_RUN_RETRIES

    @extend_schema_field(SegmentUsageSerializer(many=True))
    def get_usage(self, obj: AgentRun) -> list[dict[str, Any]]:
        # ``usage_rows``: as the view prefetched them (``Prefetch(to_attr=...)``); else a
        # query.
        rows = getattr(obj, "usage_rows", None)
        if rows is None:
            rows = obj.usage.all()
        return SegmentUsageSerializer(rows, many=True).data

    @extend_schema_field(InterruptSerializer(many=True))
    def get_pending_interrupts(self, obj: AgentRun) -> list[dict[str, Any]]:
        # ``interrupt_rows``: the run's interrupts as the view or service that gave it has
        # them (``Prefetch(to_attr=...)``, or the rows a decision wrote); else a query.
        rows = getattr(obj, "interrupt_rows", None)
        if rows is None:
            rows = obj.interrupts.all()
        rows = [i for i in rows if i.status == AgentInterrupt.Status.PENDING]
        return InterruptSerializer(rows, many=True).data


class StrictCharField(serializers.CharField):
    """A string field that refuses numbers and booleans instead of turning them into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class AnswerField(serializers.JSONField):
    """An interrupt answer: any JSON up to ANSWER_MAX_BYTES."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        check_answer_size(value, self.field_name or "payload")
        return value


class RunCreateSerializer(serializers.Serializer):
    agent = StrictCharField(max_length=100)
    input = serializers.JSONField(required=False, default=dict)
    thread_id = serializers.UUIDField(required=False, allow_null=True)
    message = StrictCharField(required=False, allow_blank=True, default="", max_length=20000)

    def validate_input(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be a JSON object")
        return value


class ResumeEntrySerializer(serializers.Serializer):
    interrupt_id = StrictCharField(max_length=64)
    status = serializers.ChoiceField(choices=["resolved", "cancelled"], default="resolved")
    payload = AnswerField(required=False, allow_null=True, default=None)


class ResumeSerializer(serializers.Serializer):
    """Either ``{interrupt_id, payload}`` for one, or ``{resume: [...]}`` for several."""

    interrupt_id = StrictCharField(max_length=64, required=False)
    payload = AnswerField(required=False, allow_null=True, default=None)
    resume = ResumeEntrySerializer(many=True, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        has_one, has_many = "interrupt_id" in attrs, "resume" in attrs
        if has_one == has_many:
            raise serializers.ValidationError(
                {"non_field_errors": ["give either interrupt_id + payload, or resume: [...]"]})
        if has_many and not attrs["resume"]:
            raise serializers.ValidationError({"resume": ["must not be empty"]})
        return attrs


class DecisionSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["resolved", "cancelled"], default="resolved",
                                     help_text="cancelled: decline the question (the graph "
                                               "gets its format's cancelled value)")
    payload = AnswerField(required=False, allow_null=True, default=None, help_text=(
        "the answer, exactly as the interrupt's graph code expects it (any JSON value; "
        "see the interrupt's `kind` and `response_schema`)"))


class AgentSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField()
    description = serializers.CharField()
    input_schema = serializers.JSONField()
    model = serializers.CharField(help_text="the chat model serving the agents: an AGENT_MODEL "
                                            "string such as 'openai:gpt-4o-mini', or 'offline'")
    offline_model = serializers.BooleanField(help_text="true when the built-in offline model "
                                                       "serves (no AGENT_MODEL set)")


class MessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    role = serializers.CharField()
    content = serializers.CharField()
    run_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ConversationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    thread_id = serializers.CharField()
    agent = serializers.CharField()
    title = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ThreadStateSerializer(serializers.Serializer):
    pending_interrupt = InterruptSerializer(allow_null=True)
    active_run_id = serializers.UUIDField(allow_null=True)


class ConversationMessagesSerializer(serializers.Serializer):
    messages = MessageSerializer(many=True)
    thread_state = ThreadStateSerializer()

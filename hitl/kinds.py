"""The seven interaction kinds on the wire: request and response models, and validation.

These are what the graph-side helpers (``hitl.ask``) need; the server reaches them
through the formats (``hitl.formats.ours``, whose ``OURS`` lists the kinds). The
request is what the graph passes to ``interrupt()`` (no id: LangGraph assigns it); the
response is the resume payload, always validated against the request it answers.
Wire-compatible with the seed's ``@agent/proto``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from agentsite.errors import pydantic_fields
from hitl import schema_errors


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Option(_Model):
    label: str = Field(min_length=1)
    value: str = Field(min_length=1)


Problem = tuple[str, str] | None  # (field, message) of an answer that does not fit


class InvalidAnswer(Exception):
    """A resume payload that does not answer its request; ``fields`` names the problems
    (``{"decisions.0.type": ["..."]}``)."""

    def __init__(self, message: str, fields: dict[str, list[str]]) -> None:
        super().__init__(message)
        self.fields = fields


def refuse(what: str, fields: dict[str, list[str]]) -> InvalidAnswer:
    """The error refusing a ``what`` answer (e.g. "select", "tool approval")."""
    return InvalidAnswer(f"invalid {what} answer: " + "; ".join(
        f"{k}: {', '.join(v)}" for k, v in fields.items()), fields)


def _closed(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


def _one_of(values: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": values}


# --- responses ----------------------------------------------------------------

class InputResponse(_Model):
    value: str


class SelectResponse(_Model):
    value: str


class MultiSelectResponse(_Model):
    values: list[str]


class ModalResponse(_Model):
    action: str


class ApprovalResponse(_Model):
    approved: bool
    reason: str | None = None


class UnlockResponse(_Model):
    pass


ReviewDecision = Literal["approve", "edit", "reject", "respond"]


class ReviewResponse(_Model):
    decision: ReviewDecision
    edited: dict[str, Any] | None = None
    reason: str | None = None
    feedback: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> ReviewResponse:
        if self.decision == "edit" and self.edited is None:
            raise ValueError("decision 'edit' needs 'edited' (the edited proposal)")
        if self.decision == "respond" and not (self.feedback or "").strip():
            raise ValueError("decision 'respond' needs non-empty 'feedback'")
        if self.decision != "edit" and self.edited is not None:
            raise ValueError(
                f"'edited' is only allowed with decision 'edit', not {self.decision!r}")
        return self


# --- requests: one class per kind, with its answer's model, check and schema ---------

# (An alias: inside a request class, ``type`` is the kind field, not the builtin.)
ResponseModel = type[_Model]


class Request(_Model):
    # Extra keys (e.g. "reason", "expiresAt") are part of the payload the UI shows.
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    type: str  # each kind's ``Literal`` name
    message: str = ""
    reason: str | None = None

    response_model: ClassVar[ResponseModel]

    def check(self, answer: Any) -> Problem:
        """What is wrong with a well-formed answer given this request, if anything."""
        return None

    def response_schema(self) -> dict[str, Any]:
        """JSON Schema of the resume payload (AG-UI ``responseSchema``)."""
        raise NotImplementedError

    def validate_answer(self, payload: Any) -> dict[str, Any]:
        """Check a resume payload against this request; return the clean payload."""
        if not isinstance(payload, dict):
            raise InvalidAnswer("payload must be a JSON object",
                                {"payload": ["expected an object"]})
        try:
            clean = self.response_model.model_validate(payload)
        except ValidationError as err:
            raise refuse(self.type, pydantic_fields(err, root="payload")) from None
        problem = self.check(clean)
        if problem:
            field, message = problem
            raise refuse(self.type, {field: [message]})
        return clean.model_dump(exclude_none=True)


class InputRequest(Request):
    type: Literal["input"] = "input"
    placeholder: str | None = None
    response_model: ClassVar[ResponseModel] = InputResponse

    def check(self, answer: InputResponse) -> Problem:
        return ("value", "must not be empty") if not answer.value.strip() else None

    def response_schema(self) -> dict[str, Any]:
        return _closed({"value": {"type": "string", "minLength": 1}}, ["value"])


class SelectRequest(Request):
    type: Literal["select"] = "select"
    options: list[Option] = Field(min_length=1)
    response_model: ClassVar[ResponseModel] = SelectResponse

    def check(self, answer: SelectResponse) -> Problem:
        offered = [o.value for o in self.options]
        if answer.value not in offered:
            return "value", f"{answer.value!r} is not one of the offered options {offered}"
        return None

    def response_schema(self) -> dict[str, Any]:
        return _closed({"value": _one_of([o.value for o in self.options])}, ["value"])


class MultiSelectRequest(Request):
    type: Literal["multiSelect"] = "multiSelect"
    options: list[Option] = Field(min_length=1)
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=1)
    response_model: ClassVar[ResponseModel] = MultiSelectResponse

    def check(self, answer: MultiSelectResponse) -> Problem:
        offered = [o.value for o in self.options]
        unknown = [v for v in answer.values if v not in offered]
        if unknown:
            return "values", f"{unknown} not among the offered options {offered}"
        if len(set(answer.values)) != len(answer.values):
            return "values", "contains duplicates"
        if self.min is not None and len(answer.values) < self.min:
            return "values", f"choose at least {self.min}"
        if self.max is not None and len(answer.values) > self.max:
            return "values", f"choose at most {self.max}"
        return None

    def response_schema(self) -> dict[str, Any]:
        items: dict[str, Any] = {"type": "array", "uniqueItems": True,
                                 "items": _one_of([o.value for o in self.options])}
        if self.min is not None:
            items["minItems"] = self.min
        if self.max is not None:
            items["maxItems"] = self.max
        return _closed({"values": items}, ["values"])


class ModalRequest(Request):
    type: Literal["modal"] = "modal"
    title: str
    body: str
    actions: list[Option] = Field(min_length=1)
    response_model: ClassVar[ResponseModel] = ModalResponse

    def check(self, answer: ModalResponse) -> Problem:
        offered = [a.value for a in self.actions]
        if answer.action not in offered:
            return "action", f"{answer.action!r} is not one of the offered actions {offered}"
        return None

    def response_schema(self) -> dict[str, Any]:
        return _closed({"action": _one_of([a.value for a in self.actions])}, ["action"])


class ApprovalRequest(Request):
    type: Literal["approval"] = "approval"
    details: Any = None
    response_model: ClassVar[ResponseModel] = ApprovalResponse

    def response_schema(self) -> dict[str, Any]:
        return _closed({"approved": {"type": "boolean"}, "reason": {"type": "string"}},
                       ["approved"])


class UnlockRequest(Request):
    type: Literal["unlock"] = "unlock"
    key: str
    response_model: ClassVar[ResponseModel] = UnlockResponse

    def response_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}, "additionalProperties": False}


class ReviewRequest(Request):
    type: Literal["review"] = "review"
    proposal: dict[str, Any]
    allowed: list[ReviewDecision] = Field(
        default_factory=lambda: ["approve", "edit", "reject", "respond"], min_length=1
    )
    editSchema: dict[str, Any] | None = None
    response_model: ClassVar[ResponseModel] = ReviewResponse

    def check(self, answer: ReviewResponse) -> Problem:
        if answer.decision not in self.allowed:
            return "decision", f"{answer.decision!r} is not allowed here (allowed: {self.allowed})"
        if answer.decision == "edit" and self.editSchema:
            error = schema_errors.first(self.editSchema, answer.edited)
            if error:
                return "edited", error
        return None

    def response_schema(self) -> dict[str, Any]:
        return _closed({"decision": _one_of(list(self.allowed)),
                        "edited": self.editSchema or {"type": "object"},
                        "reason": {"type": "string"}, "feedback": {"type": "string"}},
                       ["decision"])


InterruptRequest = Annotated[
    InputRequest | SelectRequest | MultiSelectRequest | ModalRequest | ApprovalRequest
    | UnlockRequest | ReviewRequest,
    Field(discriminator="type"),
]
_request_adapter: TypeAdapter[Any] = TypeAdapter(InterruptRequest)
# The ``type`` each request model takes (the formats' registry is ``hitl.formats.ours``).
_TYPES = frozenset(m.model_fields["type"].default
                   for m in get_args(get_args(InterruptRequest)[0]))

# The resume value of a cancelled interrupt (AG-UI resume entry with status "cancelled").
CANCELLED_RESUME = {"approved": False, "reason": "cancelled by user"}


class HitlCancelled(Exception):
    """Raised in a graph when a question that cannot be declined was cancelled."""


def parse_request(payload: Any) -> Request:
    """Validate what a graph passed to ``interrupt()`` (raises pydantic ValidationError)."""
    return _request_adapter.validate_python(payload)


def validate_response(request: dict[str, Any], payload: Any) -> dict[str, Any]:
    """Check a resume payload against the request (a dict) it answers; return the clean
    payload. With the request parsed already, ``Request.validate_answer`` does the same."""
    kind = request.get("type")
    if kind not in _TYPES:
        raise InvalidAnswer(f"unknown interaction kind {kind!r}", {"type": ["unknown kind"]})
    return parse_request(request).validate_answer(payload)


def response_schema(request: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema of the resume payload that answers ``request`` (AG-UI responseSchema)."""
    try:
        return parse_request(request).response_schema()
    except ValidationError:
        return {"type": "object"}  # not one of our kinds: any object

"""The seven interaction kinds: request and response models, and validation.

Wire-compatible with the seed's ``@agent/proto``: the request is what the graph
passes to ``interrupt()`` (no id: LangGraph assigns it); the response is the
resume payload. A response is always validated against the request it answers.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from agentsite.errors import pydantic_fields


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Option(_Model):
    label: str = Field(min_length=1)
    value: str = Field(min_length=1)


Problem = tuple[str, str] | None  # (field, message) of an answer that does not fit


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


class _Request(_Model):
    # Extra keys (e.g. "reason", "expiresAt") are part of the payload the UI shows.
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    message: str = ""
    reason: str | None = None

    response_model: ClassVar[ResponseModel]

    def check(self, answer: Any) -> Problem:
        """What is wrong with a well-formed answer given this request, if anything."""
        return None

    def response_schema(self) -> dict[str, Any]:
        """JSON Schema of the resume payload (AG-UI ``responseSchema``)."""
        raise NotImplementedError


class InputRequest(_Request):
    type: Literal["input"] = "input"
    placeholder: str | None = None
    response_model: ClassVar[ResponseModel] = InputResponse

    def check(self, answer: InputResponse) -> Problem:
        return ("value", "must not be empty") if not answer.value.strip() else None

    def response_schema(self) -> dict[str, Any]:
        return _closed({"value": {"type": "string", "minLength": 1}}, ["value"])


class SelectRequest(_Request):
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


class MultiSelectRequest(_Request):
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


class ModalRequest(_Request):
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


class ApprovalRequest(_Request):
    type: Literal["approval"] = "approval"
    details: Any = None
    response_model: ClassVar[ResponseModel] = ApprovalResponse

    def response_schema(self) -> dict[str, Any]:
        return _closed({"approved": {"type": "boolean"}, "reason": {"type": "string"}},
                       ["approved"])


class UnlockRequest(_Request):
    type: Literal["unlock"] = "unlock"
    key: str
    response_model: ClassVar[ResponseModel] = UnlockResponse

    def response_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}, "additionalProperties": False}


class ReviewRequest(_Request):
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
            error = _schema_error(self.editSchema, answer.edited)
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

# The resume value of a cancelled interrupt (AG-UI resume entry with status "cancelled").
CANCELLED_RESUME = {"approved": False, "reason": "cancelled by user"}


class HitlCancelled(Exception):
    """Raised in a graph when a question that cannot be declined was cancelled."""


KINDS = ("input", "select", "multiSelect", "modal", "approval", "unlock", "review")


class InvalidResponse(Exception):
    """A resume payload that does not answer its request; ``fields`` names the problems."""

    def __init__(self, message: str, fields: dict[str, list[str]]) -> None:
        super().__init__(message)
        self.fields = fields


def parse_request(payload: Any) -> _Request:
    """Validate what a graph passed to ``interrupt()`` (raises pydantic ValidationError)."""
    return _request_adapter.validate_python(payload)


def validate_response(request: dict[str, Any], payload: Any) -> dict[str, Any]:
    """Check a resume payload against the request it answers; return the clean payload."""
    kind = request.get("type")
    if kind not in KINDS:
        raise InvalidResponse(f"unknown interaction kind {kind!r}", {"type": ["unknown kind"]})
    if not isinstance(payload, dict):
        raise InvalidResponse("payload must be a JSON object", {"payload": ["expected an object"]})
    parsed = parse_request(request)
    try:
        clean = parsed.response_model.model_validate(payload)
    except ValidationError as err:
        fields = pydantic_fields(err, root="payload")
        raise InvalidResponse(f"invalid {kind} answer: " + "; ".join(
            f"{k}: {', '.join(v)}" for k, v in fields.items()), fields) from None
    problem = parsed.check(clean)
    if problem:
        field, message = problem
        raise InvalidResponse(f"invalid {kind} answer: {field}: {message}", {field: [message]})
    return clean.model_dump(exclude_none=True)


def _schema_error(schema: dict[str, Any], value: Any) -> str | None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(p) for p in first.path)
    return f"{where + ': ' if where else ''}{first.message}"


def response_schema(request: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema of the resume payload that answers ``request`` (AG-UI responseSchema)."""
    try:
        return parse_request(request).response_schema()
    except ValidationError:
        return {"type": "object"}  # not one of our kinds: any object

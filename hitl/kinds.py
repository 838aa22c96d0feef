"""The seven interaction kinds: request and response models, and validation.

Wire-compatible with the seed's ``@agent/proto``: the request is what the graph
passes to ``interrupt()`` (no id: LangGraph assigns it); the response is the
resume payload. A response is always validated against the request it answers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Option(_Model):
    label: str = Field(min_length=1)
    value: str = Field(min_length=1)


class _Request(_Model):
    # Extra keys (e.g. "reason", "expiresAt") are part of the payload the UI shows.
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    message: str = ""
    reason: str | None = None


class InputRequest(_Request):
    type: Literal["input"] = "input"
    placeholder: str | None = None


class SelectRequest(_Request):
    type: Literal["select"] = "select"
    options: list[Option] = Field(min_length=1)


class MultiSelectRequest(_Request):
    type: Literal["multiSelect"] = "multiSelect"
    options: list[Option] = Field(min_length=1)
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=1)


class ModalRequest(_Request):
    type: Literal["modal"] = "modal"
    title: str
    body: str
    actions: list[Option] = Field(min_length=1)


class ApprovalRequest(_Request):
    type: Literal["approval"] = "approval"
    details: Any = None


class UnlockRequest(_Request):
    type: Literal["unlock"] = "unlock"
    key: str


ReviewDecision = Literal["approve", "edit", "reject", "respond"]


class ReviewRequest(_Request):
    type: Literal["review"] = "review"
    proposal: dict[str, Any]
    allowed: list[ReviewDecision] = Field(
        default_factory=lambda: ["approve", "edit", "reject", "respond"], min_length=1
    )
    editSchema: dict[str, Any] | None = None


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


RESPONSE_MODELS: dict[str, type[_Model]] = {
    "input": InputResponse,
    "select": SelectResponse,
    "multiSelect": MultiSelectResponse,
    "modal": ModalResponse,
    "approval": ApprovalResponse,
    "unlock": UnlockResponse,
    "review": ReviewResponse,
}


class InvalidResponse(Exception):
    """A resume payload that does not answer its request; ``fields`` names the problems."""

    def __init__(self, message: str, fields: dict[str, list[str]]) -> None:
        super().__init__(message)
        self.fields = fields


def parse_request(payload: Any) -> BaseModel:
    """Validate what a graph passed to ``interrupt()`` (raises pydantic ValidationError)."""
    return _request_adapter.validate_python(payload)


def _pydantic_fields(err: ValidationError) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    for item in err.errors():
        key = ".".join(str(part) for part in item["loc"]) or "payload"
        fields.setdefault(key, []).append(item["msg"])
    return fields


def validate_response(request: dict[str, Any], payload: Any) -> dict[str, Any]:
    """Check a resume payload against the request it answers; return the clean payload."""
    kind = request.get("type")
    model = RESPONSE_MODELS.get(kind)
    if model is None:
        raise InvalidResponse(f"unknown interaction kind {kind!r}", {"type": ["unknown kind"]})
    if not isinstance(payload, dict):
        raise InvalidResponse("payload must be a JSON object", {"payload": ["expected an object"]})
    try:
        clean = model.model_validate(payload)
    except ValidationError as err:
        fields = _pydantic_fields(err)
        raise InvalidResponse(f"invalid {kind} answer: " + "; ".join(
            f"{k}: {', '.join(v)}" for k, v in fields.items()), fields) from None

    parsed = parse_request(request)
    problem = _check_against_request(parsed, clean)
    if problem:
        field, message = problem
        raise InvalidResponse(f"invalid {kind} answer: {field}: {message}", {field: [message]})
    return clean.model_dump(exclude_none=True)


def _check_against_request(request: BaseModel, answer: BaseModel) -> tuple[str, str] | None:
    if isinstance(request, InputRequest):
        if not answer.value.strip():
            return "value", "must not be empty"
    elif isinstance(request, SelectRequest):
        offered = [o.value for o in request.options]
        if answer.value not in offered:
            return "value", f"{answer.value!r} is not one of the offered options {offered}"
    elif isinstance(request, MultiSelectRequest):
        offered = [o.value for o in request.options]
        unknown = [v for v in answer.values if v not in offered]
        if unknown:
            return "values", f"{unknown} not among the offered options {offered}"
        if len(set(answer.values)) != len(answer.values):
            return "values", "contains duplicates"
        if request.min is not None and len(answer.values) < request.min:
            return "values", f"choose at least {request.min}"
        if request.max is not None and len(answer.values) > request.max:
            return "values", f"choose at most {request.max}"
    elif isinstance(request, ModalRequest):
        offered = [a.value for a in request.actions]
        if answer.action not in offered:
            return "action", f"{answer.action!r} is not one of the offered actions {offered}"
    elif isinstance(request, ReviewRequest):
        if answer.decision not in request.allowed:
            return "decision", (f"{answer.decision!r} is not allowed here "
                                f"(allowed: {request.allowed})")
        if answer.decision == "edit" and request.editSchema:
            error = _schema_error(request.editSchema, answer.edited)
            if error:
                return "edited", error
    return None


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
    kind = request.get("type")
    if kind == "input":
        return {"type": "object", "properties": {"value": {"type": "string", "minLength": 1}},
                "required": ["value"], "additionalProperties": False}
    if kind == "select":
        values = [o["value"] for o in request.get("options", [])]
        return {"type": "object", "properties": {"value": {"type": "string", "enum": values}},
                "required": ["value"], "additionalProperties": False}
    if kind == "multiSelect":
        values = [o["value"] for o in request.get("options", [])]
        items: dict[str, Any] = {"type": "array", "items": {"type": "string", "enum": values},
                                 "uniqueItems": True}
        if request.get("min") is not None:
            items["minItems"] = request["min"]
        if request.get("max") is not None:
            items["maxItems"] = request["max"]
        return {"type": "object", "properties": {"values": items}, "required": ["values"],
                "additionalProperties": False}
    if kind == "modal":
        values = [a["value"] for a in request.get("actions", [])]
        return {"type": "object", "properties": {"action": {"type": "string", "enum": values}},
                "required": ["action"], "additionalProperties": False}
    if kind == "approval":
        return {"type": "object", "properties": {"approved": {"type": "boolean"},
                                                 "reason": {"type": "string"}},
                "required": ["approved"], "additionalProperties": False}
    if kind == "unlock":
        return {"type": "object", "properties": {}, "additionalProperties": False}
    if kind == "review":
        allowed = request.get("allowed") or ["approve", "edit", "reject", "respond"]
        edited = request.get("editSchema") or {"type": "object"}
        return {
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": allowed},
                "edited": edited,
                "reason": {"type": "string"},
                "feedback": {"type": "string"},
            },
            "required": ["decision"],
            "additionalProperties": False,
        }
    return {"type": "object"}

"""Values raised by a plain ``interrupt(...)``: with a ``response_schema`` (a form from
the schema, the answer validated with jsonschema) or without (anything else: shown
readably, answered with text or JSON). The graph receives exactly the answer."""

from __future__ import annotations

from typing import Any

from hitl.formats.base import MESSAGE_MAX, InterruptFormat, clip, refuse, short_json

# Keys a dict value commonly names its question with, in order of preference.
QUESTION_KEYS = ("question", "message", "prompt", "title", "description", "text", "query")


def question_of(value: Any) -> str:
    """The question line of an arbitrary value."""
    if isinstance(value, str):
        return clip(value, MESSAGE_MAX)
    if isinstance(value, dict):
        for key in QUESTION_KEYS:
            if isinstance(value.get(key), str) and value[key].strip():
                return clip(value[key], MESSAGE_MAX)
    if value is None:
        return ""
    return short_json(value, MESSAGE_MAX)


class SchemaForm(InterruptFormat):
    """``interrupt(value, response_schema=...)``: the answer must fit the schema."""

    name, label, template = "schema_form", "Form", "hitl/cards/schema_form.html"

    @classmethod
    def recognise(cls, value: Any, response_schema: dict[str, Any] | None) -> bool:
        return isinstance(response_schema, dict) and bool(response_schema)

    def message(self) -> str:
        return question_of(self.value) or clip(str(
            (self.schema or {}).get("description") or (self.schema or {}).get("title") or ""),
            MESSAGE_MAX)

    def validate(self, answer: Any) -> Any:
        return super().validate(answer)  # jsonschema against the interrupt's schema


class Generic(InterruptFormat):
    """Anything else: the answer is any JSON value but null (text from a card)."""

    name, label, template = "generic", "Question", "hitl/cards/generic.html"

    @classmethod
    def recognise(cls, value: Any, response_schema: dict[str, Any] | None) -> bool:
        return True

    def message(self) -> str:
        return question_of(self.value)

    def validate(self, answer: Any) -> Any:
        if answer is None:
            raise refuse("question", {"payload": ["give an answer (text or any JSON value)"]})
        return answer

    def response_schema(self) -> dict[str, Any]:
        return {"description": "any JSON value: the graph receives it as it is",
                "not": {"type": "null"}}

    def answer_from_post(self, data: Any) -> Any:
        if data.get("answer_mode") == "json":
            return super().answer_from_post(data)
        return data.get("answer", "")

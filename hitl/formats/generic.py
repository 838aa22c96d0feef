"""Values raised by a plain ``interrupt(...)``: with a ``response_schema`` (a form from
the schema, the answer validated with jsonschema) or without (anything else: shown
readably, answered with text or JSON). The graph receives exactly the answer."""

from __future__ import annotations

import json
from typing import Any

from hitl import card_parts, schema_form
from hitl.formats.base import (
    MESSAGE_MAX,
    CardFormError,
    InterruptFormat,
    clip,
    short_json,
)
from hitl.kinds import refuse

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


def _plain(value: Any) -> str:
    """One answer value as a person reads it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return ", ".join(str(v) for v in value)
    return value if isinstance(value, str) else short_json(value)


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

    def summary(self, answer: Any) -> str:
        """A form's answer as "Label: value; …" in the form's field order (jsonb keeps
        neither the answer's nor the schema's key order: ``schema_form.ordered``)."""
        root = self.schema or {}
        props = schema_form.resolve(root).get("properties") or {}
        if not isinstance(answer, dict) or not props:
            return super().summary(answer)
        parts = []
        for key, value in schema_form.ordered(root, answer).items():
            sub = schema_form.resolve(props.get(key) or {}, root)
            label = str(sub.get("title") or schema_form.humanize(key))
            parts.append(f"{label}: {_plain(value)}")
        return clip("; ".join(parts), 200)

    def card_context(self, answer: Any | None, posted: dict[str, Any] | None) -> dict[str, Any]:
        schema = self.schema or {}
        fields = schema_form.fields(schema, name="answer", dom_id="", posted=posted)
        if fields is None:
            text = card_parts.posted_text(posted, "answer_json")
            fields = [{"input_name": "answer_json", "kind": "json", "label": "Your answer",
                       "help": "JSON matching the form's schema", "required": True,
                       "no_optional": True, "value": text or ""}]
        props = resolve_props(schema)
        aliases = {"payload": fields[0]["input_name"],
                   **{p: f"answer.{p}" for p in props}}
        help_text = str(schema.get("description") or "")
        return {"value": self.value, "response_schema": self.response_schema(),
                "answer": answer, "posted": posted or {}, "answer_fields": fields,
                "shown": shown_beside(self.value, self.message()),
                "schema_help": help_text if help_text != self.message() else "",
                "error_aliases": aliases}

    def answer_from_post(self, data: Any) -> Any:
        schema = self.schema or {}
        try:
            if not schema_form.is_form(schema):
                return schema_form.json_from_post(data, "answer_json")
            answer = schema_form.value_from_post(schema, data, name="answer")
        except schema_form.FormProblems as err:
            raise CardFormError(err.fields) from None
        # In plain words per field here; validate() checks the same schema again.
        problems = schema_form.plain_errors(schema, answer, name="answer")
        if problems:
            raise CardFormError(problems)
        return answer


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

    def options(self) -> list[Any]:
        """A dict's own "options" / "choices" (scalars): offered as buttons."""
        if not isinstance(self.value, dict):
            return []
        found = self.value.get("options", self.value.get("choices"))
        if isinstance(found, list) and 0 < len(found) <= 20 and all(
                isinstance(o, (str, int, float, bool)) for o in found):
            return found
        return []

    def card_context(self, answer: Any | None, posted: dict[str, Any] | None) -> dict[str, Any]:
        value, message = self.value, self.message()
        text = value if isinstance(value, str) and " ".join(value.split()) != message else ""
        rest = shown_rest(value, message)
        if isinstance(rest, dict) and self.options():
            # Its options are the card's buttons: not shown twice.
            rest = {k: v for k, v in rest.items() if k not in ("options", "choices")} or None
        pretty = "null" if value is None else "" if isinstance(value, str) or rest is None \
            else json.dumps(rest, indent=2, ensure_ascii=False, default=str)
        mode = card_parts.posted_text(posted, "answer_mode") or "text"
        return {"value": value, "response_schema": self.response_schema(), "answer": answer,
                "posted": posted or {}, "text": text, "pretty": pretty,
                "options": [o if isinstance(o, str) else json.dumps(o) for o in self.options()],
                "error_aliases": {"payload": "answer"},
                "answer_fields": [
                    {"input_name": "answer", "kind": "textarea", "label": "Your answer",
                     "rows": 3, "required": True, "no_optional": True,
                     "value": card_parts.posted_text(posted, "answer") or ""},
                    {"input_name": "answer_mode", "kind": "radio", "label": "Send it as",
                     "value": mode, "options": [
                         {"value": "text", "label": "text"},
                         {"value": "json", "label": "JSON (a number, true, a list, an object…)"}]},
                ]}

    def answer_from_post(self, data: Any) -> Any:
        option = data.get("option")
        if option not in (None, ""):
            options = self.options()
            if not option.isdigit() or int(option) >= len(options):
                raise CardFormError({"answer": ["that option is not offered"]})
            return options[int(option)]  # exactly the value offered, whatever its type
        text = data.get("answer", "")
        if data.get("answer_mode") == "json":
            try:
                return json.loads(text)
            except ValueError as err:
                raise CardFormError({"answer": [
                    f"This is not valid JSON ({err.msg}, line {err.lineno} column "
                    f"{err.colno}); choose “text” to send it as it is"]}) from None
        if not text.strip():
            raise CardFormError({"answer": ["Your answer: write something first"]})
        return text


def shown_rest(value: Any, message: str) -> Any:
    """The value without the key its question line came from (None: nothing left)."""
    if isinstance(value, dict):
        rest = {k: v for k, v in value.items()
                if not (k in QUESTION_KEYS and isinstance(v, str)
                        and " ".join(v.split()) == message)}
        return rest or None
    return value


def shown_beside(value: Any, message: str) -> Any:
    """What a card shows of the value besides its question line, readably (None: nothing)."""
    if isinstance(value, str):
        return None if " ".join(value.split()) == message else card_parts.readable(value)
    rest = shown_rest(value, message)
    return None if rest is None or value is None else card_parts.readable(rest)


def resolve_props(schema: dict[str, Any]) -> list[str]:
    return list((schema_form.resolve(schema).get("properties") or {}).keys())

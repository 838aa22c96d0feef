"""The new-chat form, generated from an agent's input JSON Schema (pydantic's)."""

from __future__ import annotations

from typing import Any

from hitl.cards import humanize


def _plain(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(schema without a null alternative, nullable)."""
    options = schema.get("anyOf")
    if isinstance(options, list):
        rest = [o for o in options if o.get("type") != "null"]
        if len(rest) == 1:
            return {**schema, **rest[0], "anyOf": None}, len(rest) != len(options)
    return schema, False


def input_fields(schema: dict[str, Any], values: dict[str, Any] | None = None,
                 errors: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    values, errors = values or {}, errors or {}
    required = set(schema.get("required") or [])
    fields = []
    for name, raw in (schema.get("properties") or {}).items():
        sub, _ = _plain(raw if isinstance(raw, dict) else {})
        kind = sub.get("type")
        if "enum" in sub:
            widget = "select"
        elif kind == "boolean":
            widget = "checkbox"
        elif kind in ("integer", "number"):
            widget = "number"
        elif kind == "string" and (sub.get("maxLength") or 0) > 300:
            widget = "textarea"
        elif kind == "string":
            widget = "text"
        else:
            widget = "json"
        default = sub.get("default")
        value = values.get(name, "" if default is None else default)
        fields.append({
            "name": name, "id": f"input-{name}", "label": sub.get("title") or humanize(name),
            "help": sub.get("description", ""), "widget": widget, "required": name in required,
            "value": value, "choices": [str(c) for c in sub.get("enum", [])],
            "step": "1" if kind == "integer" else "any", "errors": errors.get(name, []),
            "kind": kind,
        })
    return fields


def input_from_post(schema: dict[str, Any], data: Any) -> tuple[dict[str, Any], dict]:
    """(input dict, form errors). Empty optional fields are left out so defaults apply."""
    import json

    out: dict[str, Any] = {}
    problems: dict[str, list[str]] = {}
    for field in input_fields(schema):
        name, widget = field["name"], field["widget"]
        if widget == "checkbox":
            out[name] = data.get(name) == "on"
            continue
        text = (data.get(name) or "").strip()
        if not text:
            continue
        try:
            if widget == "number":
                out[name] = int(text) if field["kind"] == "integer" else float(text)
            elif widget == "json":
                out[name] = json.loads(text)
            else:
                out[name] = text
        except ValueError:
            problems[name] = ["not a valid value"]
    return out, problems

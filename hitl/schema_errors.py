"""Checking a value against a JSON Schema: the one place that runs jsonschema.

``found`` gives jsonschema's errors in path order; each caller shapes them for its
readers: ``by_field`` for API clients (``{dotted.path: [messages]}``), ``first`` for a
one-line problem, ``hitl.schema_form.plain_errors`` in a reviewer's words.
"""

from __future__ import annotations

from typing import Any

import jsonschema

# What an unusable schema raises while it is checked.
UNUSABLE = (jsonschema.exceptions.SchemaError, jsonschema.exceptions.UnknownType,
            TypeError, ValueError)


def found(schema: dict[str, Any], value: Any) -> list[jsonschema.ValidationError]:
    """jsonschema's errors for ``value``, sorted by path (the schema's own ``$schema``
    draft, else 2020-12); raises one of ``UNUSABLE`` for a schema that cannot be used."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return sorted(cls(schema).iter_errors(value), key=lambda e: [str(p) for p in e.path])


def first(schema: dict[str, Any], value: Any) -> str | None:
    """The first error as one line (``"path/to: message"``), or None."""
    errors = found(schema, value)
    if not errors:
        return None
    where = "/".join(str(p) for p in errors[0].path)
    return f"{where + ': ' if where else ''}{errors[0].message}"


def by_field(schema: dict[str, Any], value: Any, root: str = "payload"
             ) -> dict[str, list[str]]:
    """The errors as ``{dotted.path: [messages]}`` (``root`` for the whole value); an
    unusable schema is one error under ``root``."""
    try:
        errors = found(schema, value)
    except UNUSABLE as err:
        return {root: [f"the interrupt's response schema cannot be used: {err}"]}
    fields: dict[str, list[str]] = {}
    for error in errors:
        path = [str(p) for p in error.path]
        named = _names_at_fault(error)
        for name in named or [None]:
            key = ".".join(path + ([name] if name else [])) or root
            fields.setdefault(key, []).append(
                error.message if not name else
                "required" if error.validator == "required" else "not an accepted field")
    return fields


def _names_at_fault(error: Any) -> list[str]:
    """The properties a "required" / "additionalProperties" error is about (jsonschema
    reports them on the object): each gets its own field error."""
    instance = error.instance if isinstance(error.instance, dict) else None
    if instance is None:
        return []
    if error.validator == "required" and isinstance(error.validator_value, list):
        missing = [n for n in error.validator_value if isinstance(n, str) and n not in instance]
        return [n for n in missing if repr(n) in error.message][:1] or missing[:1]
    if error.validator == "additionalProperties" and error.validator_value is False:
        known = (error.schema.get("properties") or {}) if isinstance(error.schema, dict) else {}
        patterns = error.schema.get("patternProperties") if isinstance(error.schema,
                                                                       dict) else None
        if patterns:
            return []
        return [str(n) for n in instance if n not in known]
    return []

"""A form generated from a JSON Schema, for the review cards (pure: no queries, no writes).

Used wherever a card edits a value described by a schema: a review's ``editSchema``, a tool's
argument schema (HumanInTheLoopMiddleware, Agent Inbox), an ``interrupt(response_schema=...)``.
What it renders: an object's properties (strings, numbers, integers, booleans, enums, arrays
of enums as checkboxes, arrays of strings one per line), or one scalar; anything richer is
one JSON editor. Descriptions are help text, ``required`` is honoured (an empty input of a
required field is missing, text included: the field gets the HTML ``required`` attribute
and the post is refused), and errors are plain words per field ("Steps: add at least one
step").

Field order: Postgres ``jsonb`` keeps object keys in its own order (shortest first), so a
stored schema has lost the order its ``properties`` were written in. Fields follow, in turn:
the schema's ``x-order`` / ``ui:order`` list, each property's ``x-order`` / ``propertyOrder``
number, the ``required`` list (a list keeps its order; pydantic writes it in declaration
order), then the rest.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from hitl import schema_errors

SCALARS = ("string", "number", "integer", "boolean")


class FormProblems(Exception):
    """Form fields that cannot become a value: ``fields`` maps input names to messages."""

    def __init__(self, fields: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {', '.join(v)}" for k, v in fields.items()))
        self.fields = fields


def humanize(key: Any) -> str:
    text = str(key).replace("_", " ").strip()
    # camelCase → words
    out = "".join(" " + c.lower() if c.isupper() and i else c for i, c in enumerate(text))
    return out[:1].upper() + out[1:]


# --- reading a schema ------------------------------------------------------------------------

def resolve(schema: Any, root: dict[str, Any] | None = None) -> dict[str, Any]:
    """A sub-schema with local ``$ref``s followed and ``X | None`` reduced to ``X``."""
    root = root if root is not None else (schema if isinstance(schema, dict) else {})
    for _ in range(8):  # a ref chain, never a cycle
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part) if isinstance(target, dict) else None
            extra = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**(target if isinstance(target, dict) else {}), **extra}
            continue
        branches = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(branches, list):
            real = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
            if len(real) == 1:
                rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
                schema = {**resolve(real[0], root), **rest}
                continue
        return schema
    return {}


def field_kind(schema: dict[str, Any]) -> str:
    """How one value is edited: a widget name."""
    kind = schema.get("type")
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, (str, int, float)) for v in enum):
        return "enum"
    if kind in SCALARS:
        return kind
    if kind == "array":
        items = resolve(schema.get("items") or {}, schema)
        if isinstance(items.get("enum"), list) and items["enum"]:
            return "enum_list"
        if items.get("type") == "string":
            return "string_list"
    return "json"


def _order(schema: dict[str, Any], names: list[str]) -> list[str]:
    explicit = schema.get("x-order") or schema.get("ui:order")
    explicit = [n for n in explicit if n in names] if isinstance(explicit, list) else []
    props = schema.get("properties") or {}

    def rank(name: str) -> Any:
        sub = props.get(name) if isinstance(props.get(name), dict) else {}
        number = sub.get("x-order", sub.get("propertyOrder"))
        return number if isinstance(number, (int, float)) else float("inf")

    required = [n for n in (schema.get("required") or []) if n in names]
    numbered = sorted((n for n in names if rank(n) != float("inf")), key=rank)
    out: list[str] = []
    for name in [*explicit, *numbered, *required, *names]:
        if name not in out:
            out.append(name)
    return out


def ordered(schema: Any, value: Any) -> Any:
    """``value`` (an object) with its keys in the schema's field order, the rest after."""
    top = resolve(schema)
    if not isinstance(value, dict) or not top.get("properties"):
        return value
    names = [n for n in _order(top, list(top["properties"])) if n in value]
    return {**{n: value[n] for n in names}, **value}


def is_form(schema: Any) -> bool:
    """Whether the schema gets generated fields (else: one JSON editor)."""
    schema = resolve(schema)
    if schema.get("type") == "object" or "properties" in schema:
        return bool(schema.get("properties"))
    return field_kind(schema) != "json"


# --- fields to render ------------------------------------------------------------------------

def _initial_text(kind: str, value: Any) -> Any:
    if value is None:
        return [] if kind == "enum_list" else ""
    if kind == "string_list":
        return "\n".join(str(v) for v in value) if isinstance(value, list) else str(value)
    if kind == "enum_list":
        return [json.dumps(v) if not isinstance(v, str) else v for v in value] \
            if isinstance(value, list) else []
    if kind == "json":
        return json.dumps(value, indent=2, ensure_ascii=False)
    if kind == "boolean":
        return "on" if value else ""
    if kind == "enum" and not isinstance(value, str):
        return json.dumps(value)
    return str(value)


def _choice(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def fields(schema: Any, *, name: str, dom_id: str, initial: Any = None,
           posted: Any = None, errors: dict[str, list[str]] | None = None,
           focus: bool = False) -> list[dict[str, Any]] | None:
    """Fields for the card template ``hitl/cards/_fields.html``; None → use a JSON editor.

    ``name``: the form name of the value (properties are ``<name>.<property>``); ``posted``:
    the form as posted (a QueryDict, to keep what was typed); ``errors``: by input name;
    ``focus``: mark the first field in error ``autofocus`` (focus returns to it).
    """
    root = schema if isinstance(schema, dict) else {}
    schema = resolve(root)
    errors = errors or {}
    if schema.get("properties"):
        props = schema["properties"]
        required = set(schema.get("required") or [])
        initial = initial if isinstance(initial, dict) else {}
        specs = [(f"{name}.{key}", f"{dom_id}-{key}", resolve(props[key], root), key in required,
                  initial.get(key, resolve(props[key], root).get("default")), key)
                 for key in _order(schema, list(props))]
    elif field_kind(schema) != "json" and schema.get("type") != "object":
        value = initial if initial is not None else schema.get("default")
        specs = [(name, dom_id, schema, True, value, "")]
    else:
        return None
    out = []
    for input_name, fid, sub, req, value, key in specs:
        kind = field_kind(sub)
        posted_value: Any = None
        if posted:
            if kind == "enum_list":
                posted_value = _getlist(posted, input_name) if f"{input_name}.sent" in posted \
                    else None
            elif input_name in posted or kind == "boolean" and f"{input_name}.sent" in posted:
                got = posted.get(input_name, "")
                posted_value = got[-1] if isinstance(got, list) and got else got or ""
        items = resolve(sub.get("items") or {}, root) if kind == "enum_list" else {}
        field_errors = list(errors.get(input_name, []))
        out.append({
            "name": key, "input_name": input_name, "id": fid, "kind": kind,
            "label": sub.get("title") or (humanize(key) if key else "Your answer"),
            "help": sub.get("description", ""), "required": req,
            # The browser refuses it empty too ("" is missing; a list or a box may be empty).
            "html_required": req and kind not in ("boolean", "enum_list", "string_list"),
            "choices": [_choice(v) for v in (items.get("enum") if kind == "enum_list"
                                             else sub.get("enum") or [])],
            "value": posted_value if posted_value is not None else _initial_text(kind, value),
            "errors": field_errors, "errors_id": f"{fid}-errors", "autofocus": False,
            "step": "1" if kind == "integer" else "any",
        })
    if focus:
        for field in out:
            if field["errors"]:
                field["autofocus"] = True
                break
    return out


def _getlist(data: Any, key: str) -> list[Any]:
    if hasattr(data, "getlist"):
        return data.getlist(key)
    got = data.get(key)
    return got if isinstance(got, list) else [] if got is None else [got]


# --- form post → value -------------------------------------------------------------------------

def _number(kind: str, text: str) -> int | float:
    if kind == "integer":
        return int(text)
    number = float(text)
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() \
        else number


def _enum_value(sub: dict[str, Any], text: str) -> Any:
    for option in sub.get("enum") or []:
        if _choice(option) == text:
            return option
    return text


def value_from_post(schema: Any, data: Any, *, name: str) -> Any:
    """The value a generated form posts (see ``fields``); raises FormProblems."""
    root = schema if isinstance(schema, dict) else {}
    schema = resolve(root)
    problems: dict[str, list[str]] = {}
    if schema.get("properties"):
        props = schema["properties"]
        required = set(schema.get("required") or [])
        specs = [(f"{name}.{key}", resolve(props[key], root), key in required, key)
                 for key in _order(schema, list(props))]
    else:
        specs = [(name, schema, True, "")]
    value: dict[str, Any] = {}
    for input_name, sub, req, key in specs:
        kind = field_kind(sub)
        label = sub.get("title") or humanize(key or "answer")
        if kind == "boolean":
            value[key] = data.get(input_name) in ("on", "true", "1")
            continue
        if kind == "enum_list":
            items = resolve(sub.get("items") or {}, root)
            value[key] = [_enum_value(items, t) for t in _getlist(data, input_name)]
            continue
        raw = data.get(input_name) or ""
        text = raw.strip() if kind != "string" else raw
        # An empty input is a missing value, also for a required text: a form cannot
        # tell "" from "not filled in" (the API takes "" where the schema does).
        if not text.strip() and not req:
            continue
        if not text.strip() and kind != "string_list":
            problems[input_name] = [f"{label}: fill this in"]
            continue
        try:
            if kind in ("number", "integer"):
                value[key] = _number(kind, text)
            elif kind == "string_list":
                value[key] = [line.strip() for line in text.splitlines() if line.strip()]
            elif kind == "json":
                value[key] = json.loads(text)
            elif kind == "enum":
                value[key] = _enum_value(sub, text)
            else:
                value[key] = text
        except ValueError:
            problems[input_name] = [f"{label}: " + {
                "integer": "enter a whole number", "number": "enter a number",
                "json": "this is not valid JSON"}.get(kind, "this value is not valid")]
    if problems:
        if schema.get("properties"):  # the other fields' problems too, all at once
            for key, messages in plain_errors(root, value, name=name).items():
                problems.setdefault(key, messages)
        raise FormProblems(problems)
    return value if schema.get("properties") else value.get("")


def json_from_post(data: Any, input_name: str) -> Any:
    """The value of a JSON editor; raises FormProblems naming it."""
    text = data.get(input_name) or ""
    try:
        return json.loads(text)
    except ValueError as err:
        raise FormProblems({input_name: [f"This is not valid JSON ({err.msg}, line "
                                         f"{err.lineno} column {err.colno})"]}) from None


# --- errors in plain words -------------------------------------------------------------------

def _noun(key: str, sub: dict[str, Any], root: dict[str, Any]) -> str:
    items = resolve(sub.get("items") or {}, root)
    if items.get("title"):
        return str(items["title"]).lower()
    word = humanize(key).lower() if key else "item"
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _count(n: int, noun: str) -> str:
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    return f"{words.get(n, n)} {noun}{'' if n == 1 else 's'}"


TYPE_WORDS = {"string": "text", "number": "a number", "integer": "a whole number",
              "boolean": "yes or no", "array": "a list", "object": "a set of fields",
              "null": "empty"}


def plain(error: Any, key: str, sub: dict[str, Any], root: dict[str, Any]) -> str:
    """One jsonschema ValidationError in a reviewer's words (without the field's label)."""
    v, arg = error.validator, error.validator_value
    if v == "minItems":
        return f"add at least {_count(arg, _noun(key, sub, root))}"
    if v == "maxItems":
        return f"keep at most {_count(arg, _noun(key, sub, root))}"
    if v == "minLength":
        return "fill this in" if arg == 1 else f"use at least {arg} characters"
    if v == "maxLength":
        return f"use at most {arg} characters"
    if v == "required":
        return "fill this in"
    if v == "type":
        wanted = arg if isinstance(arg, list) else [arg]
        return "enter " + " or ".join(TYPE_WORDS.get(t, t) for t in wanted)
    if v == "enum":
        return "choose one of " + ", ".join(_choice(x) for x in arg)
    if v in ("minimum", "exclusiveMinimum"):
        return f"enter {'at least' if v == 'minimum' else 'more than'} {arg}"
    if v in ("maximum", "exclusiveMaximum"):
        return f"enter {'at most' if v == 'maximum' else 'less than'} {arg}"
    if v == "pattern":
        return "this does not have the expected form"
    if v == "format":
        return f"enter a valid {arg}"
    if v == "uniqueItems":
        return "remove the repeated entries"
    if v == "additionalProperties":
        return "remove the fields this form does not take"
    return error.message


def plain_errors(schema: Any, value: Any, *, name: str) -> dict[str, list[str]]:
    """Validate ``value`` against ``schema``: {input name: ["Label: plain words"]}, or {}.

    Errors inside a property belong to that property's field; the rest to ``name``.
    """
    root = schema if isinstance(schema, dict) else {}
    try:
        found = schema_errors.found(root, value)
    except jsonschema.SchemaError:
        return {}
    top = resolve(root)
    props = top.get("properties") or {}
    out: dict[str, list[str]] = {}
    for error in found:
        path = list(error.path)
        key = str(path[0]) if path and str(path[0]) in props else ""
        if not key and error.validator == "required" and props:
            missing = next((k for k in error.validator_value if k not in (value or {})), "")
            key = missing if missing in props else ""
        sub = resolve(props[key], root) if key else top
        label = sub.get("title") or humanize(key) if key else "Answer"
        where = "".join(f"[{p}]" for p in path[1:]) if key else ""
        input_name = f"{name}.{key}" if key else name
        out.setdefault(input_name, []).append(f"{label}{where}: {plain(error, key, sub, root)}")
    return out

"""Strict JSON for every API body: what Postgres (jsonb, text) and Python can hold.

Refused with a 400 in the API's error shape, before any view or service sees the data:
nesting deeper than ``MAX_DEPTH`` (deep JSON exhausts Python's recursion in every
later step), NUL characters (Postgres text cannot hold them), lone UTF-16 surrogates
(not valid Unicode; jsonb rejects them) and NaN / Infinity (not JSON). A body over
``DATA_UPLOAD_MAX_MEMORY_SIZE`` raises Django's ``RequestDataTooBig`` (a 413).
``check_value`` also checks what the HTML forms parse (JSON editors: ``hitl.cards``,
the chat pages' new-chat form); their raw fields pass ``agentsite.form_guard``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.http import HttpRequest
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding

from agentsite.errors import InvalidInput

MAX_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _bad_string(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character (\\u0000)"
    if _SURROGATE.search(text):
        return "contains an unpaired UTF-16 surrogate"
    return None


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def check_value(data: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise InvalidInput naming the first bad place in parsed JSON; walks without recursion."""
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            problem = _bad_string(value)
            if problem:
                raise InvalidInput(f"A string {problem}.", code="invalid_string",
                                   fields={path or "body": [problem]})
            continue
        if isinstance(value, float) and not math.isfinite(value):
            # Only JSON parsed elsewhere (a form's JSON editor) gets here: loads() refuses it.
            raise InvalidInput("NaN and Infinity are not JSON numbers.", code="invalid_number",
                               fields={path or "body": ["not a finite number"]})
        if not isinstance(value, (dict, list)):
            continue
        if depth > max_depth:
            where = path if len(path) <= 80 else path[:80] + "…"
            raise InvalidInput(f"JSON is nested deeper than {max_depth} levels.",
                               code="too_deep", fields={where or "body": ["nested too deep"]})
        if isinstance(value, dict):
            for key, item in value.items():
                problem = _bad_string(key)
                if problem:
                    raise InvalidInput(f"A key {problem}.", code="invalid_string",
                                       fields={path or "body": [f"a key {problem}"]})
                stack.append((item, _child(path, key), depth + 1))
        else:
            stack.extend((item, _child(path, i), depth + 1) for i, item in enumerate(value))


def loads(raw: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse and check a JSON document (also for views outside DRF, e.g. AG-UI)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise InvalidInput(f"JSON is nested deeper than {max_depth} levels.", code="too_deep",
                           fields={"body": ["nested too deep"]}) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN, huge integers
        raise ParseError(f"JSON parse error - {exc}") from None
    check_value(data, max_depth)
    return data


class StrictJSONParser(JSONParser):
    """DRF's JSON parser with the checks above."""

    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: dict | None = None) -> Any:
        encoding = get_encoding(parser_context or {})
        # HttpRequest.body enforces DATA_UPLOAD_MAX_MEMORY_SIZE; reading the request as a
        # stream (what DRF's parser does) would not.
        raw = stream.body if isinstance(stream, HttpRequest) else stream.read()
        if encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
            try:
                raw = raw.decode(encoding)
            except UnicodeDecodeError as exc:
                raise ParseError(f"JSON parse error - {exc}") from None
        return loads(raw)

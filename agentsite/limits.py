"""Size limits on what clients send that ends up copied into checkpoints and messages."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from agentsite.errors import InvalidInput


def answer_size(payload: Any) -> int:
    """Bytes of ``payload`` as compact UTF-8 JSON (what is stored)."""
    return len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())


def check_answer_size(payload: Any, field: str = "payload") -> None:
    """Refuse an interrupt answer over ``ANSWER_MAX_BYTES`` with a 400 naming the limit."""
    limit = settings.ANSWER_MAX_BYTES
    size = answer_size(payload)
    if size > limit:
        problem = f"the answer is {size} bytes; at most {limit} (ANSWER_MAX_BYTES)"
        raise InvalidInput(f"Answer too large: {problem}.", code="answer_too_large",
                           fields={field: [problem]})

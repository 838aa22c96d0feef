"""The text/event-stream vocabulary every stream door shares: the opening bytes, one
event's text, and the headers that keep proxies from caching or buffering a stream.

The wire format is django-eventstream's (static/agentsite/events.js reads it): a padding
comment and ``event: stream-open`` first, then ``event: message`` with ``id:
<channel>:<n>``. Used by the direct streams (``streams.sse``), the GRIP answers
(``streams.grip``), the AG-UI door and the LangGraph API door.
"""

from __future__ import annotations

import json
from typing import TypeVar
from urllib.parse import quote

from django.http import HttpResponseBase

Response = TypeVar("Response", bound=HttpResponseBase)
# The first bytes: a comment that makes proxies and old browsers start delivering.
OPENING = ":" + " " * 2048 + "\n\nevent: stream-open\ndata:\n\n"


def opening(event_id: str | None = None) -> str:
    """The stream's first bytes; a stream "from now on" names where now is (``event_id``),
    so a client can resume from there before any event came (``opened_at``)."""
    if event_id is None:
        return OPENING
    return OPENING.replace("event: stream-open\n", f"event: stream-open\nid: {event_id}\n")


def opened_at(channel: str, current: int | str) -> str:
    """The id of a "from now on" stream's ``stream-open``: ``<channel>:<current id>``."""
    return f"{quote(channel)}:{current}"


def sse_event(event: str, data: str, event_id: str | None = None) -> str:
    out = f"event: {event}\n"
    if event_id is not None:
        out += f"id: {event_id}\n"
    return out + "".join(f"data: {line}\n" for line in data.splitlines() or [""]) + "\n"


def stream_reset(channel: str) -> str:
    """django-eventstream's ``stream-reset``: events of ``channel`` may be lost for good;
    the client rebuilds what it shows (static/agentsite/events.js: ``onGap``)."""
    return sse_event("stream-reset", json.dumps({"channels": [channel]}))


def no_cache(response: Response) -> Response:
    """``response`` (a stream) neither cached nor buffered by a proxy (nginx too)."""
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response

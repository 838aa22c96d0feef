"""A taken-over segment continues the AG-UI run its lost worker started.

The lost worker published ``RUN_STARTED`` and maybe opened a text message, tool calls
or steps, then died. A second ``RUN_STARTED`` inside that run would break the protocol
for every listener, so the new owner reads what was published, closes what is open and
goes on in the same AG-UI run.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import redis.exceptions
from ag_ui.core import BaseEvent

from agui.events import run_started, step_finished, text_end, tool_call_end
from streams.keys import counter_key, event_key, run_channel
from streams.publish import redis_client

log = logging.getLogger(__name__)
ENDS = ("RUN_FINISHED", "RUN_ERROR")


def reopen(run_id: str, *, thread_id: str) -> list[BaseEvent]:
    """Events that let a taken-over segment publish on: closers of what the lost worker
    left open, or ``RUN_STARTED`` if no AG-UI run is open on the channel."""
    try:
        last = _last_run(run_channel(run_id))
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        log.warning("run %s: cannot read its events (%s); starting a new AG-UI run",
                    run_id, exc)
        last = None
    if last is None:
        return [run_started(thread_id=thread_id, run_id=run_id)]
    texts: list[str] = []
    tools: list[str] = []
    steps: list[str] = []
    for event in last[1:]:
        kind = event.get("type")
        if kind == "TEXT_MESSAGE_START":
            texts.append(event["messageId"])
        elif kind == "TEXT_MESSAGE_END" and event.get("messageId") in texts:
            texts.remove(event["messageId"])
        elif kind == "TOOL_CALL_START":
            tools.append(event["toolCallId"])
        elif kind == "TOOL_CALL_END" and event.get("toolCallId") in tools:
            tools.remove(event["toolCallId"])
        elif kind == "STEP_STARTED":
            steps.append(event["stepName"])
        elif kind == "STEP_FINISHED" and event.get("stepName") in steps:
            steps.remove(event["stepName"])
    return ([text_end(m) for m in texts] + [tool_call_end(t) for t in tools]
            + [step_finished(s) for s in steps])


def _last_run(channel: str) -> list[dict[str, Any]] | None:
    """The channel's last AG-UI run (from its RUN_STARTED) if it never ended, else None."""
    client = redis_client()
    count = int(client.get(counter_key(channel)) or 0)
    tail: list[dict[str, Any]] = []
    for event_id in range(count, 0, -1):
        raw = client.get(event_key(channel, event_id))
        if raw is None:  # expired: nothing open we could know of
            return None
        data = json.loads(raw)["data"]
        event = json.loads(data) if isinstance(data, str) else data
        if event.get("type") in ENDS:
            return None
        tail.append(event)
        if event.get("type") == "RUN_STARTED":
            return list(reversed(tail))
    return None

"""What a run's stored AG-UI events add to the business tables while a segment runs.

A segment's text reaches the Message row only when the segment ends (pause / finish);
until then it exists only as the run's published events. The chat page is rendered on
the server, so it reads those stored events to show the text so far, the tool calls and
the current step, and tells the page's script which event id to continue after.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from streams.keys import counter_key, event_key, run_channel
from streams.publish import redis_client


@dataclass
class ToolCall:
    id: str
    name: str
    args: str = ""
    result: str | None = None
    done: bool = False


@dataclass
class RunLive:
    last_event_id: int = 0
    # Text of the segment that is still running (not yet in the Message row).
    text: str = ""
    # The assistant message as the last MESSAGES_SNAPSHOT of a finished segment had it.
    snapshot_text: str | None = None
    segment_open: bool = False
    step: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)

    def text_over(self, stored: str) -> str:
        """The assistant message so far, given its Message row content ``stored``.

        The row was read before the events: a segment that closed in between is in the
        events' last MESSAGES_SNAPSHOT (published after its commit), so that wins.
        """
        base = self.snapshot_text if self.snapshot_text is not None else stored
        return base + (self.text if self.segment_open else "")


def _events(raws: list[bytes | None]) -> list[dict[str, Any]]:
    out = []
    for raw in raws:
        if not raw:
            continue  # expired (events live 24 h)
        data = json.loads(raw)["data"]
        out.append(json.loads(data) if isinstance(data, str) else data)
    return out


def read_runs(runs: list[Any], *, max_events: int = 2000) -> dict[str, RunLive]:
    """The stored events of ``runs``, folded into what a page shows; two Redis round trips."""
    if not runs:
        return {}
    client = redis_client()
    channels = [run_channel(r.id) for r in runs]
    counts = [int(c or 0) for c in client.mget([counter_key(c) for c in channels])]
    keys: list[str] = []
    spans = []
    for channel, count in zip(channels, counts, strict=True):
        first = max(1, count - max_events + 1)
        spans.append((len(keys), count - first + 1 if count else 0))
        keys += [event_key(channel, i) for i in range(first, count + 1)]
    raws = client.mget(keys) if keys else []
    out: dict[str, RunLive] = {}
    for run, count, (start, n) in zip(runs, counts, spans, strict=True):
        live = RunLive(last_event_id=count)
        _fold(live, _events(raws[start:start + n]), str(run.assistant_message_id))
        out[str(run.id)] = live
    return out


def _fold(live: RunLive, events: list[dict[str, Any]], message_id: str) -> None:
    calls: dict[str, ToolCall] = {}
    for event in events:
        kind = event.get("type")
        if kind == "RUN_STARTED":
            live.segment_open, live.text, live.step = True, "", ""
        elif kind in ("RUN_FINISHED", "RUN_ERROR"):
            live.segment_open, live.step = False, ""
        elif kind == "TEXT_MESSAGE_CONTENT" and event.get("messageId") == message_id:
            live.text += event.get("delta", "")
        elif kind == "MESSAGES_SNAPSHOT":
            for message in event.get("messages", []):
                if message.get("id") == message_id:
                    # The message as it stands: the segment's text so far is replaced
                    # (a retried attempt streams a cut-off part anew after it).
                    live.snapshot_text, live.text = message.get("content") or "", ""
        elif kind == "STEP_STARTED":
            live.step = event.get("stepName", "")
        elif kind == "STEP_FINISHED":
            live.step = ""
        elif kind == "TOOL_CALL_START":
            call = ToolCall(id=event["toolCallId"], name=event.get("toolCallName", ""))
            calls[call.id] = call
            live.tool_calls.append(call)
        elif kind == "TOOL_CALL_ARGS" and event.get("toolCallId") in calls:
            calls[event["toolCallId"]].args += event.get("delta", "")
        elif kind == "TOOL_CALL_END" and event.get("toolCallId") in calls:
            calls[event["toolCallId"]].done = True
        elif kind == "TOOL_CALL_RESULT" and event.get("toolCallId") in calls:
            calls[event["toolCallId"]].result = event.get("content", "")

"""Where a fork starts, and what the original did after it: read from the checkpointer.

The checkpoint at which an interrupt was pending is the one whose pending writes hold
that interrupt (LangGraph's ``__interrupt__`` write, kept beside the checkpoint after the
answer too). A thread whose history was pruned (``execution.checkpoint_pruning``) has
lost it. The checkpointer is read directly, as ``lgapi.state`` does: no graph code, so
web processes may call these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from execution.checkpointer import get_checkpointer
from execution.recovery import SEGMENT_KEY

INTERRUPT = "__interrupt__"


def _thread(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def _interrupt_ids(value: Any) -> set[str]:
    items = value if isinstance(value, (list, tuple)) else [value]
    found = set()
    for item in items:
        ident = item.get("id") if isinstance(item, dict) else getattr(item, "id", None)
        if ident:
            found.add(str(ident))
    return found


def interrupt_checkpoint(thread_id: str, interrupt_id: str) -> Any:
    """The checkpoint tuple of ``thread_id`` at which ``interrupt_id`` was pending, or
    None (never there, or pruned since)."""
    for saved in get_checkpointer().list(_thread(thread_id)):  # newest first
        for _task, channel, value in saved.pending_writes or ():
            if channel == INTERRUPT and interrupt_id in _interrupt_ids(value):
                return saved
    return None


@dataclass(frozen=True)
class ToolCall:
    """A tool call the original run executed after the fork point (it has a result)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    tool_call_id: str = ""
    result: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "args": self.args, "tool_call_id": self.tool_call_id,
                "result": self.result}


def _messages(saved: Any) -> list[Any]:
    values = saved.checkpoint.get("channel_values", {}) if saved else {}
    found = values.get("messages")
    return list(found) if isinstance(found, list) else []


def _run_latest(thread_id: str, run_id: str) -> Any:
    """The newest checkpoint one of the run's segments wrote (``SEGMENT_KEY`` names them)."""
    for saved in get_checkpointer().list(_thread(thread_id)):
        tag = str((saved.metadata or {}).get(SEGMENT_KEY) or "")
        if tag.startswith(f"{run_id}/"):
            return saved
    return None


def tool_calls_after(*, thread_id: str, run_id: str, fork_point: Any) -> list[ToolCall]:
    """The tool calls the run executed after ``fork_point``: tool results in its last
    checkpoint that the fork point's messages do not hold, with the call that asked."""
    before = {getattr(m, "id", None) for m in _messages(fork_point)}
    after = _messages(_run_latest(thread_id, run_id))
    asked: dict[str, dict[str, Any]] = {}
    for message in after:
        for call in getattr(message, "tool_calls", None) or ():
            asked[str(call.get("id"))] = call
    done = []
    for message in after:
        if getattr(message, "type", "") != "tool" or getattr(message, "id", None) in before:
            continue
        call_id = str(getattr(message, "tool_call_id", ""))
        call = asked.get(call_id, {})
        content = getattr(message, "content", "")
        done.append(ToolCall(name=str(call.get("name") or getattr(message, "name", "") or "?"),
                             args=dict(call.get("args") or {}), tool_call_id=call_id,
                             result=content if isinstance(content, str) else str(content)))
    return done

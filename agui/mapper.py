"""LangGraph stream parts → AG-UI events (the worker's stream mapper).

``tasks`` parts become ``STEP_STARTED`` / ``STEP_FINISHED``, one step per node: a node's
tasks that run at once (parallel tool calls, ``Send``) share its step, opened by the first
and finished by the last. The protocol names a step by ``stepName`` alone, and the
official client refuses a second ``STEP_STARTED`` of a name still open ("Step "tools" is
already active"); the node's name stays the step's name, as other LangGraph integrations
send it, so no open step ever shares a name (what ``agui.open_state`` and
``streams.storage`` rely on when they close open steps). ``messages`` parts become
``TEXT_MESSAGE_*`` (one assistant message id for the whole run, continued across
pauses) and ``TOOL_CALL_*``, and so do the messages in ``updates`` parts (for an agent
without model tokens, ``Agent.model_tokens``). Every message, tool call and step it
opens is closed before the segment ends (``close_all``, in ``agui.open_state``'s order):
the official client enforces that.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import BaseEvent
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage

from agui import events as ev
from agui.open_state import closers


class EventMapper:
    """Turns LangGraph stream parts into AG-UI events, keeping open/close balanced."""

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self.text_open = False
        self.text = ""
        self.open_tool_calls: dict[str, str] = {}  # chunk index/id → tool call id
        self.seen_tool_results: set[str] = set()
        self.open_tasks: dict[str, str] = {}  # task id → node name
        self.open_steps: dict[str, int] = {}  # node name → its tasks still running

    def _close_text(self) -> list[BaseEvent]:
        if not self.text_open:
            return []
        self.text_open = False
        return [ev.text_end(self.message_id)]

    def _close_tools(self) -> list[BaseEvent]:
        events: list[BaseEvent] = [ev.tool_call_end(tc) for tc in self.open_tool_calls.values()]
        self.open_tool_calls.clear()
        return events

    def _text(self, content: str) -> list[BaseEvent]:
        events: list[BaseEvent] = self._close_tools()
        if not self.text_open:
            self.text_open = True
            events.append(ev.text_start(self.message_id))
        self.text += content
        events.append(ev.text_content(self.message_id, content))
        return events

    def on_message(self, message: Any) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if isinstance(message, ToolMessage):
            events += self._close_text() + self._close_tools()
            if message.tool_call_id not in self.seen_tool_results:
                self.seen_tool_results.add(message.tool_call_id)
                events.append(ev.tool_call_result(
                    message.id or f"{message.tool_call_id}-result", message.tool_call_id,
                    str(message.content)))
            return events
        if not isinstance(message, (AIMessage, AIMessageChunk)):
            return events
        content = message.content if isinstance(message.content, str) else "".join(
            part.get("text", "") for part in message.content if isinstance(part, dict))
        if content:
            events += self._text(content)
        chunks = getattr(message, "tool_call_chunks", None) or []
        if isinstance(message, AIMessageChunk) and chunks:
            for chunk in chunks:
                key = str(chunk.get("index") if chunk.get("index") is not None else chunk.get("id"))
                if key not in self.open_tool_calls:
                    events += self._close_text()
                    call_id = chunk.get("id") or f"{self.message_id}-{key}"
                    self.open_tool_calls[key] = call_id
                    events.append(ev.tool_call_start(call_id, chunk.get("name") or "",
                                                     self.message_id))
                if chunk.get("args"):
                    events.append(ev.tool_call_args(self.open_tool_calls[key], chunk["args"]))
        elif isinstance(message, AIMessage) and message.tool_calls:
            events += self._close_text()
            for call in message.tool_calls:
                events += [ev.tool_call_start(call["id"], call["name"], self.message_id),
                           ev.tool_call_args(call["id"], json.dumps(call["args"])),
                           ev.tool_call_end(call["id"])]
        return events

    def on_update(self, update: Any) -> list[BaseEvent]:
        """The messages a node wrote (an ``updates`` part: node name → its update), as
        the ``messages`` mode passes on a node's whole messages."""
        events: list[BaseEvent] = []
        for written in (update.values() if isinstance(update, dict) else ()):
            found = written.get("messages") if isinstance(written, dict) else None
            for message in (found if isinstance(found, (list, tuple)) else [found]):
                if isinstance(message, BaseMessage):
                    events += self.on_message(message)
        return events

    def on_task(self, task: dict[str, Any]) -> list[BaseEvent]:
        if "result" in task or "error" in task or "interrupts" in task:
            name = self.open_tasks.pop(task["id"], None)
            if name is None:
                return []
            self.open_steps[name] -= 1
            if self.open_steps[name]:
                return []  # another task of the node still runs in its step
            del self.open_steps[name]
            return self._close_text() + self._close_tools() + [ev.step_finished(name)]
        name = task["name"]
        self.open_tasks[task["id"]] = name
        self.open_steps[name] = self.open_steps.get(name, 0) + 1
        return [ev.step_started(name)] if self.open_steps[name] == 1 else []

    def close_all(self) -> list[BaseEvent]:
        """Close every message, tool call and step still open, in the one closing order
        (``agui.open_state.closers``)."""
        events = closers(texts=[self.message_id] if self.text_open else (),
                         tools=self.open_tool_calls.values(), steps=self.open_steps)
        self.text_open = False
        self.open_tool_calls.clear()
        self.open_tasks.clear()
        self.open_steps.clear()
        return events

"""Execute one segment of a run in the worker: stream the graph, map to AG-UI, record.

The graph runs outside any Django transaction; the checkpointer writes through its
own pooled connections. Business rows are written only by the services in
``runs.services`` before and after the graph step.
"""

from __future__ import annotations

import logging
from typing import Any

from ag_ui.core import (
    BaseEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from django.conf import settings
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langgraph.types import Command

from hitl.kinds import HitlCancelled
from runs import agui, registry, services
from runs.publish import publish

log = logging.getLogger(__name__)

FINAL_STATUSES = {"completed", "rejected", "blocked", "cancelled"}


class EventMapper:
    """Turns LangGraph stream parts into AG-UI events, keeping open/close balanced."""

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self.text_open = False
        self.text = ""
        self.open_tool_calls: dict[str, str] = {}  # chunk index/id → tool call id
        self.seen_tool_results: set[str] = set()
        self.open_steps: dict[str, str] = {}  # task id → node name

    def _close_text(self) -> list[BaseEvent]:
        if not self.text_open:
            return []
        self.text_open = False
        return [TextMessageEndEvent(message_id=self.message_id, timestamp=agui.now_ms())]

    def _close_tools(self) -> list[BaseEvent]:
        events: list[BaseEvent] = [ToolCallEndEvent(tool_call_id=tc, timestamp=agui.now_ms())
                                   for tc in self.open_tool_calls.values()]
        self.open_tool_calls.clear()
        return events

    def _text(self, content: str) -> list[BaseEvent]:
        events: list[BaseEvent] = self._close_tools()
        if not self.text_open:
            self.text_open = True
            events.append(TextMessageStartEvent(message_id=self.message_id, role="assistant",
                                                timestamp=agui.now_ms()))
        self.text += content
        events.append(TextMessageContentEvent(message_id=self.message_id, delta=content,
                                              timestamp=agui.now_ms()))
        return events

    def on_message(self, message: Any) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if isinstance(message, ToolMessage):
            events += self._close_text() + self._close_tools()
            if message.tool_call_id not in self.seen_tool_results:
                self.seen_tool_results.add(message.tool_call_id)
                events.append(ToolCallResultEvent(
                    message_id=message.id or f"{message.tool_call_id}-result",
                    tool_call_id=message.tool_call_id, content=str(message.content),
                    role="tool", timestamp=agui.now_ms()))
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
                    events.append(ToolCallStartEvent(tool_call_id=call_id,
                                                     tool_call_name=chunk.get("name") or "",
                                                     parent_message_id=self.message_id,
                                                     timestamp=agui.now_ms()))
                if chunk.get("args"):
                    events.append(ToolCallArgsEvent(tool_call_id=self.open_tool_calls[key],
                                                    delta=chunk["args"], timestamp=agui.now_ms()))
        elif isinstance(message, AIMessage) and message.tool_calls:
            import json

            events += self._close_text()
            for call in message.tool_calls:
                events += [
                    ToolCallStartEvent(tool_call_id=call["id"], tool_call_name=call["name"],
                                       parent_message_id=self.message_id, timestamp=agui.now_ms()),
                    ToolCallArgsEvent(tool_call_id=call["id"], delta=json.dumps(call["args"]),
                                      timestamp=agui.now_ms()),
                    ToolCallEndEvent(tool_call_id=call["id"], timestamp=agui.now_ms()),
                ]
        return events

    def on_task(self, task: dict[str, Any]) -> list[BaseEvent]:
        if "result" in task or "error" in task or "interrupts" in task:
            name = self.open_steps.pop(task["id"], None)
            if name is None:
                return []
            return self._close_text() + self._close_tools() + [
                StepFinishedEvent(step_name=name, timestamp=agui.now_ms())]
        self.open_steps[task["id"]] = task["name"]
        return [StepStartedEvent(step_name=task["name"], timestamp=agui.now_ms())]

    def close_all(self) -> list[BaseEvent]:
        events = self._close_text() + self._close_tools()
        for name in self.open_steps.values():
            events.append(StepFinishedEvent(step_name=name, timestamp=agui.now_ms()))
        self.open_steps.clear()
        return events


def execute(segment: services.Segment) -> None:
    """Run the graph from the segment's start (or resume) until it pauses or ends."""
    graph = registry.compiled(segment.agent)
    config = {"configurable": {"thread_id": segment.thread_id}}
    if segment.resume is not None:
        graph_input: Any = Command(resume=segment.resume)
    else:
        graph_input = segment.initial_state  # None continues from the last checkpoint

    mapper = EventMapper(segment.assistant_message_id)
    publish(segment.run_id, [agui.run_started(thread_id=segment.thread_id,
                                              run_id=segment.run_id)])
    cancelled: HitlCancelled | None = None
    try:
        for mode, part in graph.stream(graph_input, config, stream_mode=["tasks", "messages"],
                                       durability=settings.AGENTSITE_GRAPH_DURABILITY):
            if mode == "tasks":
                events = mapper.on_task(part)
            else:
                message, _meta = part
                events = mapper.on_message(message)
            if events:
                publish(segment.run_id, events)
    except HitlCancelled as exc:
        cancelled = exc
    finally:
        # Close whatever is open even on error: the protocol wants everything closed.
        tail = mapper.close_all()
        if tail:
            publish(segment.run_id, tail)

    if cancelled is not None:
        if services.run_finish(segment=segment, status="cancelled", result=None,
                               text=mapper.text, state={}, reason=str(cancelled)) is None:
            _publish_cancelled(segment)
        return
    snapshot = graph.get_state(config)
    values = dict(snapshot.values or {})
    state = agui.json_state({k: v for k, v in values.items() if k != "messages"})
    pending = [services.PendingInterrupt(interrupt_id=i.id, request=_as_request(i.value))
               for task in snapshot.tasks for i in task.interrupts]
    if pending:
        if services.run_pause(segment=segment, interrupts=pending, text=mapper.text,
                              state=state) is None:
            _publish_cancelled(segment)
        return
    status = values.get("outcome") or "completed"
    if status not in FINAL_STATUSES:
        raise ValueError(f"graph ended with outcome {status!r}; expected one of {FINAL_STATUSES}")
    if services.run_finish(segment=segment, status=status, result=agui.json_state(
            {"r": values.get("result")})["r"], text=mapper.text, state=state,
            reason=str(values.get("outcome_reason") or "")) is None:
        _publish_cancelled(segment)


def _publish_cancelled(segment: services.Segment) -> None:
    # The run was cancelled while this segment ran (run_cancel leaves ending a running
    # segment to us): end the AG-UI run we started, so no listener waits forever.
    publish(segment.run_id, [agui.run_finished_cancelled(thread_id=segment.thread_id,
                                                         run_id=segment.run_id)])


def _as_request(value: Any) -> dict[str, Any]:
    # A graph may interrupt with a bare value (not one of our kinds): show it as input.
    if isinstance(value, dict) and "type" in value:
        return value
    return {"type": "input", "message": str(value)}

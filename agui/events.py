"""AG-UI 1.0 event constructors, built with ag-ui-protocol's own classes: every AG-UI
event object the product sends is made here.

Which events close a segment, for each run status, is ``agui.outcomes``; how the
graph's stream becomes events is ``agui.mapper``.

Why our own mapping and not ag-ui-langgraph's: that package drives the graph in
the web process and keeps the run in memory; here the graph runs in a Celery
worker, text continues one business assistant message across pauses, and the
interrupt outcome comes from our AgentInterrupt rows (ids, expiry, schema).
"""

from __future__ import annotations

import time
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    CustomEvent,
    Interrupt,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)
from langchain_core.load import dumpd
from langchain_core.messages import BaseMessage

from hitl.formats import InterruptFormat

PROTOCOL_VERSION = "1.0"


def now_ms() -> int:
    return int(time.time() * 1000)


def custom(name: str, value: Any) -> CustomEvent:
    return CustomEvent(name=name, value=value, timestamp=now_ms())


def run_started(*, thread_id: str, run_id: str) -> RunStartedEvent:
    return RunStartedEvent(thread_id=thread_id, run_id=run_id,
                           protocol_version=PROTOCOL_VERSION, timestamp=now_ms())


def step_started(name: str) -> StepStartedEvent:
    return StepStartedEvent(step_name=name, timestamp=now_ms())


def step_finished(name: str) -> StepFinishedEvent:
    return StepFinishedEvent(step_name=name, timestamp=now_ms())


def text_start(message_id: str) -> TextMessageStartEvent:
    return TextMessageStartEvent(message_id=message_id, role="assistant", timestamp=now_ms())


def text_content(message_id: str, delta: str) -> TextMessageContentEvent:
    return TextMessageContentEvent(message_id=message_id, delta=delta, timestamp=now_ms())


def text_end(message_id: str) -> TextMessageEndEvent:
    return TextMessageEndEvent(message_id=message_id, timestamp=now_ms())


def tool_call_start(call_id: str, name: str, parent_message_id: str) -> ToolCallStartEvent:
    return ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name,
                              parent_message_id=parent_message_id, timestamp=now_ms())


def tool_call_args(call_id: str, delta: str) -> ToolCallArgsEvent:
    return ToolCallArgsEvent(tool_call_id=call_id, delta=delta, timestamp=now_ms())


def tool_call_end(call_id: str) -> ToolCallEndEvent:
    return ToolCallEndEvent(tool_call_id=call_id, timestamp=now_ms())


def tool_call_result(message_id: str, call_id: str, content: str) -> ToolCallResultEvent:
    return ToolCallResultEvent(message_id=message_id, tool_call_id=call_id, content=content,
                               role="tool", timestamp=now_ms())


def interrupt_model(*, interrupt_id: str, fmt: InterruptFormat,
                    expires_at: str | None = None) -> Interrupt:
    """An interrupt as AG-UI carries it: ``metadata`` is the raw value the graph raised
    (a JSON object as it is; anything else, which AG-UI's object-only metadata cannot
    hold, as ``{"value": <raw>}``), beside the format's message, reason and schema."""
    value = fmt.value
    return Interrupt(
        id=interrupt_id,
        reason=fmt.reason(),
        message=fmt.message() or None,
        tool_call_id=fmt.tool_call_id(),
        metadata=value if isinstance(value, dict) else {"value": value},
        response_schema=fmt.response_schema(),
        expires_at=expires_at or fmt.expires_at(),
    )


def run_finished_interrupt(*, thread_id: str, run_id: str,
                           interrupts: list[Interrupt]) -> RunFinishedEvent:
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, timestamp=now_ms(),
                            outcome=RunFinishedInterruptOutcome(interrupts=interrupts))


def run_finished_success(*, thread_id: str, run_id: str, result: Any) -> RunFinishedEvent:
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, timestamp=now_ms(),
                            result=result, outcome=RunFinishedSuccessOutcome())


def run_finished_cancelled(*, thread_id: str, run_id: str) -> RunFinishedEvent:
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, timestamp=now_ms(),
                            outcome=RunFinishedCancelledOutcome())


def run_error(*, message: str, code: str) -> RunErrorEvent:
    return RunErrorEvent(message=message, code=code, timestamp=now_ms())


def messages_snapshot(messages: list[Any]) -> MessagesSnapshotEvent:
    """From business Message rows: ids stay those the TEXT_MESSAGE events used."""
    out: list[Any] = []
    for m in messages:
        if m.role == "user":
            out.append(UserMessage(id=str(m.id), role="user", content=m.content))
        else:
            out.append(AssistantMessage(id=str(m.id), role="assistant", content=m.content))
    return MessagesSnapshotEvent(messages=out, timestamp=now_ms())


def json_state(values: dict[str, Any]) -> dict[str, Any]:
    """Graph state as JSON (LangChain messages serialised in their own format)."""

    def convert(value: Any) -> Any:
        if isinstance(value, BaseMessage):
            return {"type": value.type, "id": value.id, "content": value.content}
        if isinstance(value, dict):
            return {str(k): convert(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [convert(v) for v in value]
        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        try:
            return dumpd(value)
        except Exception:  # noqa: BLE001 - state may hold anything; show its repr
            return repr(value)

    return convert(values)


def state_snapshot(values: dict[str, Any]) -> StateSnapshotEvent:
    return StateSnapshotEvent(snapshot=json_state(values), timestamp=now_ms())


def state_without_messages(values: dict[str, Any]) -> dict[str, Any]:
    """Graph state as STATE_SNAPSHOT carries it: messages travel in MESSAGES_SNAPSHOT."""
    return json_state({k: v for k, v in values.items() if k != "messages"})

"""Execute one segment of a run in the worker: stream the graph, map to AG-UI, record.

The graph runs outside any Django transaction; the checkpointer writes through its
own pooled connections. Business rows are written only by ``execution.lifecycle``
before and after the graph step.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from langgraph.types import Command

from agui.events import json_state, run_finished_cancelled, run_started, state_without_messages
from agui.mapper import EventMapper
from execution import graphs, lifecycle
from execution.lifecycle import PendingInterrupt, Segment
from hitl.kinds import HitlCancelled
from streams.publish import publish

log = logging.getLogger(__name__)

# How a graph may end (its state's ``outcome``); failed is for errors only.
FINAL_STATUSES = {"completed", "rejected", "blocked", "cancelled"}


def execute(segment: Segment) -> None:
    """Run the graph from the segment's start (or resume) until it pauses or ends."""
    graph = graphs.compiled(segment.agent)
    config = {"configurable": {"thread_id": segment.thread_id}}
    if segment.resume is not None:
        graph_input: Any = Command(resume=segment.resume)
    else:
        graph_input = segment.initial_state  # None continues from the last checkpoint

    mapper = EventMapper(segment.assistant_message_id)
    publish(segment.run_id, [run_started(thread_id=segment.thread_id,
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
        if lifecycle.run_finish(segment=segment, status="cancelled", result=None,
                               text=mapper.text, state={}, reason=str(cancelled)) is None:
            _publish_cancelled(segment)
        return
    snapshot = graph.get_state(config)
    values = dict(snapshot.values or {})
    state = state_without_messages(values)
    pending = [PendingInterrupt(interrupt_id=i.id, request=_as_request(i.value))
               for task in snapshot.tasks for i in task.interrupts]
    if pending:
        if lifecycle.run_pause(segment=segment, interrupts_raised=pending, text=mapper.text,
                               state=state) is None:
            _publish_cancelled(segment)
        return
    status = values.get("outcome") or "completed"
    if status not in FINAL_STATUSES:
        raise ValueError(f"graph ended with outcome {status!r}; expected one of {FINAL_STATUSES}")
    if lifecycle.run_finish(segment=segment, status=status, result=json_state(
            {"r": values.get("result")})["r"], text=mapper.text, state=state,
            reason=str(values.get("outcome_reason") or "")) is None:
        _publish_cancelled(segment)


def _publish_cancelled(segment: Segment) -> None:
    # The run was cancelled while this segment ran (run_cancel leaves ending a running
    # segment to us): end the AG-UI run we started, so no listener waits forever.
    publish(segment.run_id, [run_finished_cancelled(thread_id=segment.thread_id,
                                                    run_id=segment.run_id)])


def _as_request(value: Any) -> dict[str, Any]:
    # A graph may interrupt with a bare value (not one of our kinds): show it as input.
    if isinstance(value, dict) and "type" in value:
        return value
    return {"type": "input", "message": str(value)}

"""Execute one segment of a run in the worker: stream the graph, map to AG-UI, record.

The graph runs outside any Django transaction; the checkpointer writes through its
own pooled connections. Business rows are written only by ``execution.lifecycle``
before and after the graph step.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import redis.exceptions
from django.conf import settings
from langgraph.types import Command

from agentsite import timing
from agui.events import json_state, run_finished_cancelled, run_started, state_without_messages
from agui.mapper import EventMapper
from execution import graphs, lifecycle, recovery
from execution.lifecycle import PendingInterrupt, Segment
from hitl.kinds import HitlCancelled
from streams.publish import publish

log = logging.getLogger(__name__)

# How a graph may end (its state's ``outcome``); failed is for errors only.
FINAL_STATUSES = {"completed", "rejected", "blocked", "cancelled"}


class SegmentLost(Exception):
    """The run is no longer this segment's to run: cancelled, or taken over."""


def execute(segment: Segment, lost: threading.Event | None = None) -> None:
    """Run the graph from the segment's start (or resume) until it pauses or ends.

    Between graph steps it checks that the run is still ours (``lost``: set by the
    lease's heartbeat; and a look at the run before each step): a cancelled run stops
    there, cooperatively, instead of calling more tools.
    """
    graph = graphs.compiled(segment.agent)
    config = {"configurable": {"thread_id": segment.thread_id}}
    graph_input = _graph_input(graph, config, segment)

    out = _Publisher(segment.run_id)
    mapper = EventMapper(segment.assistant_message_id)
    if segment.takeover:
        out.send(recovery.reopen(segment.run_id, thread_id=segment.thread_id))
    else:
        out.send([run_started(thread_id=segment.thread_id, run_id=segment.run_id)])
    cancelled: HitlCancelled | None = None
    stopped = False
    try:
        for mode, part in graph.stream(graph_input, config, stream_mode=["tasks", "messages"],
                                       durability=settings.AGENTSITE_GRAPH_DURABILITY):
            if mode == "tasks":
                if "input" in part and not _still_ours(segment, lost):
                    raise SegmentLost()  # before the step starts: it runs nothing
                events = mapper.on_task(part)
            else:
                message, _meta = part
                events = mapper.on_message(message)
            if events:
                out.send(events)
    except HitlCancelled as exc:
        cancelled = exc
    except SegmentLost:
        stopped = True
    except BaseException:
        # Close whatever is open even on error: the protocol wants everything closed.
        out.send(mapper.close_all())
        raise

    if stopped:
        if lifecycle.run_status(segment.run_id) == "cancelled":
            out.send(mapper.close_all())
            _publish_cancelled(segment, out)
        # Else another worker took the segment over after our lease lapsed: it goes on
        # in the same AG-UI run and closes what we left open (execution.recovery).
        log.info("run %s: segment stopped, the run is no longer ours", segment.run_id)
        return
    out.send(mapper.close_all())
    if cancelled is not None:
        if lifecycle.run_finish(segment=segment, status="cancelled", result=None,
                                text=mapper.text, state={}, reason=str(cancelled)) is None:
            _end_foreign(segment, out)
        return
    snapshot = graph.get_state(config)
    timing.mark(segment.run_id, "graph_done")  # benchmarks only (off by default)
    values = dict(snapshot.values or {})
    state = state_without_messages(values)
    pending = [PendingInterrupt(interrupt_id=i.id, request=_as_request(i.value))
               for task in snapshot.tasks for i in task.interrupts]
    if pending:
        if lifecycle.run_pause(segment=segment, interrupts_raised=pending, text=mapper.text,
                               state=state) is None:
            _end_foreign(segment, out)
        return
    status = values.get("outcome") or "completed"
    if status not in FINAL_STATUSES:
        raise ValueError(f"graph ended with outcome {status!r}; expected one of {FINAL_STATUSES}")
    if lifecycle.run_finish(segment=segment, status=status, result=json_state(
            {"r": values.get("result")})["r"], text=mapper.text, state=state,
            reason=str(values.get("outcome_reason") or "")) is None:
        _end_foreign(segment, out)


def _graph_input(graph: Any, config: dict[str, Any], segment: Segment) -> Any:
    """What to stream: the resume answers, the initial state, or None (go on from the
    last checkpoint). A takeover looks at the checkpoint the lost worker left."""
    if not segment.takeover:
        if segment.resume is not None:
            return Command(resume=segment.resume)
        return segment.initial_state  # None continues from the last checkpoint
    snapshot = graph.get_state(config)
    waiting = {i.id for task in snapshot.tasks for i in task.interrupts}
    if segment.resume is not None and waiting & set(segment.resume):
        return Command(resume=segment.resume)  # the answers never reached the graph
    if snapshot.created_at is None and segment.initial_state is not None:
        return segment.initial_state  # lost before its first checkpoint: start over
    return None


def _still_ours(segment: Segment, lost: threading.Event | None) -> bool:
    if lost is not None and lost.is_set():
        return False
    return lifecycle.segment_held(segment)


class _Publisher:
    """Live events are best effort: a Redis failure mid-segment is logged and the graph
    goes on (business state never depends on events; connect rebuilds from the DB)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.failed = False

    def send(self, events: list[Any]) -> None:
        if not events:
            return
        try:
            publish(self.run_id, events)
            self.failed = False
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            if not self.failed:
                log.warning("run %s: events lost, Redis unavailable: %s", self.run_id, exc)
            self.failed = True


def _end_foreign(segment: Segment, out: _Publisher) -> None:
    # The segment's end was refused: cancelled while it ran (run_cancel leaves ending a
    # live segment to us), or taken over (the new owner ends the AG-UI run).
    if lifecycle.run_status(segment.run_id) == "cancelled":
        _publish_cancelled(segment, out)


def _publish_cancelled(segment: Segment, out: _Publisher) -> None:
    # End the AG-UI run we started, so no listener waits forever.
    out.send([run_finished_cancelled(thread_id=segment.thread_id, run_id=segment.run_id)])


def _as_request(value: Any) -> dict[str, Any]:
    # A graph may interrupt with a bare value (not one of our kinds): show it as input.
    if isinstance(value, dict) and "type" in value:
        return value
    return {"type": "input", "message": str(value)}

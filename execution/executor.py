"""Execute one segment of a run in the worker: stream the graph, map to AG-UI, record.

The graph runs outside any Django transaction; the checkpointer writes through its
own pooled connections. Business rows are written only by ``execution.lifecycle``
before and after the graph step.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import redis.exceptions
from django.conf import settings
from langchain_core.messages import AIMessage
from langgraph.types import Command

from agentsite import timing
from agui.events import json_state, state_without_messages
from agui.mapper import EventMapper
from execution import calls, fork_copy, graphs, history, lifecycle, recovery, tool_schemas
from execution.fencing import SegmentLost, segment_config
from execution.lifecycle import PendingInterrupt, Segment
from execution.stop import StopWatch
from execution.stream_modes import StreamModes
from execution.usage import UsageCounter
from hitl.kinds import HitlCancelled
from observability import tracing
from observability.model_calls import ModelCallMetrics
from runs import registry
from streams.db import release_db_connections
from streams.publish import publish

log = logging.getLogger(__name__)

# How a graph may end (its state's ``outcome``); failed is for errors only.
FINAL_STATUSES = {"completed", "rejected", "blocked", "cancelled"}
# The key under which LangGraph hands out the questions a run stopped on (as in the
# result of ``invoke``).
INTERRUPT_KEY = "__interrupt__"


def execute(segment: Segment, lost: threading.Event | None = None,
            stop: StopWatch | None = None) -> None:
    """Run the segment (``_execute``) and record the tokens its model calls used.

    ``stop``: the run's stop notice (``execution.stop``): on a cancel it cuts the
    segment's model calls in flight (``execution.calls``), so a cut call never ends, is
    never retried and uses no tokens we record."""
    usage = UsageCounter()
    try:
        with calls.segment_calls() as in_flight:
            if stop is not None:
                stop.on_stop(in_flight.abort)
            _execute(segment, lost, usage, stop)
    except calls.CallAborted:
        log.info("run %s: segment stopped, its model call cut by the cancel", segment.run_id)
    finally:
        # A pause or finish recorded the usage with the run's new status; a segment that
        # failed, was stopped or lost its run records it here.
        tokens = None if usage.recorded else usage.tokens()
        if tokens is not None:
            try:
                lifecycle.usage_record(segment=segment, tokens=tokens)
            except Exception:  # noqa: BLE001 - usage is not worth a run; logged
                log.exception("run %s: token usage not recorded", segment.run_id)


def _execute(segment: Segment, lost: threading.Event | None, usage: UsageCounter,
             stop: StopWatch | None = None) -> None:
    """Run the graph from the segment's start (or resume) until it pauses or ends:
    prepare (graph, config, input, the segment's first events), stream, record."""
    timing.mark(segment.run_id, "claimed")  # benchmarks only (off by default)
    run = _prepare(segment, usage)
    if _stream(run, segment, _Ownership(segment, lost, stop)):
        _record(run, segment, usage)


@dataclass
class _Run:
    """What a segment's stream and its record share."""

    graph: Any
    config: dict[str, Any]
    graph_input: Any
    messages_mode: str
    out: _Publisher
    mapper: EventMapper
    # The LangGraph modes the run's client asked for, published as RAW events.
    asked: StreamModes
    end: _End = field(default_factory=lambda: _End())
    # The cancel a question's format raised (``hitl.kinds.HitlCancelled``), if any.
    cancelled: HitlCancelled | None = None


def _prepare(segment: Segment, usage: UsageCounter) -> _Run:
    """The graph, its config and input; a takeover's catch-up events sent (a fresh
    segment's RUN_STARTED went with its claim); a run's start's unanswered tool calls
    answered."""
    graph = graphs.compiled(segment.agent)
    agent = registry.get(segment.agent)
    # Messages: as a model streams them, or whole from each node's update.
    messages_mode = "messages" if agent is None or agent.model_tokens else "updates"
    # Each checkpoint names the segment that wrote it: a takeover reads back what its
    # lost worker stored (``execution.recovery.lost_work``).
    tag = recovery.segment_tag(segment.run_id, segment.segments_done + 1)
    config = {"configurable": {"thread_id": segment.thread_id,
                               **segment_config(run_id=segment.run_id, lease=segment.lease)},
              "metadata": {recovery.SEGMENT_KEY: tag}, "callbacks": [usage, ModelCallMetrics(),
                            *tracing.graph_callbacks(run_id=segment.run_id,
                                                     segment=segment.segments_done + 1)]}
    if segment.fork_checkpoint and segment.segments_done == 1:
        # A fork's first segment: its new thread starts from the original's checkpoint.
        fork_copy.fork_thread_seed(graph.checkpointer, segment)
    left = recovery.LostWork()  # what the lost worker of a taken-over segment stored
    if segment.takeover:
        # A failed run retried: its repair task (execution.history) may still be writing.
        history.wait_for_repair(segment.thread_id)
        left = recovery.lost_work(graph.checkpointer, thread_id=segment.thread_id, tag=tag,
                                  everywhere=messages_mode == "messages")
    graph_input = _graph_input(graph, config, segment, left)
    run = _Run(graph=graph, config=config, graph_input=graph_input,
               messages_mode=messages_mode, out=_Publisher(segment.run_id, segment.lease),
               mapper=EventMapper(segment.assistant_message_id),
               asked=StreamModes(segment.stream_modes))
    if segment.takeover:
        run.out.send(_take_over(segment, run.mapper, left))
    # A fresh segment's RUN_STARTED went out with its claim's fence, on the claim's commit
    # (execution.lifecycle): one command fewer, and sooner than the first step's events.
    if graph_input is not None and graph_input is segment.initial_state:
        # A run's start: answer the tool calls an earlier run left unanswered, before
        # the model sees the thread (after RUN_STARTED: it holds no event back).
        history.repair_at_start(graph, run_id=segment.run_id, thread_id=segment.thread_id)
    return run


def _stream(run: _Run, segment: Segment, ours: _Ownership) -> bool:
    """Stream the graph, publishing the mapped events. False when the segment stopped
    because the run is no longer ours (cancelled, or taken over): nothing to record.

    Before each step it checks that the run is still ours (``ours``): a cancelled run
    stops there, cooperatively, instead of calling more tools. Steps closer together
    than ``AGENTSITE_CANCEL_CHECK_SECONDS`` go unchecked: the pause / finish
    transaction sees a cancel under the run's lock all the same."""
    own = ["tasks", run.messages_mode, "values"]
    modes = own + [m for m in run.asked.graph_modes() if m not in own]
    end = run.end
    try:
        for item in run.graph.stream(run.graph_input, run.config, stream_mode=modes,
                                     subgraphs=run.asked.subgraphs,
                                     durability=settings.AGENTSITE_GRAPH_DURABILITY):
            ns, mode, part = item if run.asked.subgraphs else ((), *item)
            raw = run.asked.events(mode, part, ns)
            if raw:
                run.out.send(raw)
            if ns and mode != "messages":
                continue  # a subgraph's own parts are for the client that asked for them
            if mode == "values":
                end.on_values(part)
                continue
            if mode not in own:
                continue
            if mode == "tasks":
                if "input" in part and not ours.still():
                    raise SegmentLost()  # before the step starts: it runs nothing
                events = run.mapper.on_task(part)
            elif mode == "updates":
                events = run.mapper.on_update(part)
            else:
                message, _meta = part
                events = run.mapper.on_message(message)
            if events:
                run.out.send(events)
    except HitlCancelled as exc:
        run.cancelled = exc
        return True
    except (SegmentLost, calls.CallAborted):
        # Cancelled: the cancel ended the AG-UI run. Taken over: the new owner goes on in
        # it and closes what we left open (execution.recovery). Either way the event
        # store no longer takes our events (the fence).
        log.info("run %s: segment stopped, the run is no longer ours", segment.run_id)
        return False
    except BaseException:
        # Close whatever is open even on error: the protocol wants everything closed.
        run.out.send(run.mapper.close_all())
        raise
    return True


def _record(run: _Run, segment: Segment, usage: UsageCounter) -> None:
    """The segment's end in the business rows: cancelled, paused on its questions, or
    finished; its closing events go out on that commit (or not at all, when the end was
    not ours to write)."""
    closing = run.mapper.close_all()
    if run.cancelled is not None:
        ended = lifecycle.run_finish(
            segment=segment, status="cancelled", result=None, text=run.mapper.text,
            state={}, reason=str(run.cancelled), before=closing, tokens=usage.tokens())
        _segment_ended(segment, usage, ended)
        return
    values, raised = run.end.result(run.graph, run.config)
    timing.mark(segment.run_id, "graph_done")  # benchmarks only (off by default)
    state = state_without_messages(values)
    pending = [PendingInterrupt(interrupt_id=i.id, request=_as_json(i.value),
                                response_schema=_as_json(i.response_schema),
                                args_schemas=tool_schemas.for_question(
                                    run.graph, i.value, i.response_schema))
               for i in raised]
    if pending:
        tracing.paused(run_id=segment.run_id, interrupt_ids=[i.interrupt_id for i in pending])
        ended = lifecycle.run_pause(
            segment=segment, interrupts_raised=pending, text=run.mapper.text, state=state,
            before=closing, tokens=usage.tokens())
        _segment_ended(segment, usage, ended)
        return
    status = values.get("outcome") or "completed"
    if status not in FINAL_STATUSES:
        raise ValueError(f"graph ended with outcome {status!r}; expected one of {FINAL_STATUSES}")
    ended = lifecycle.run_finish(
        segment=segment, status=status, result=json_state({"r": values.get("result")})["r"],
        text=run.mapper.text, state=state, reason=str(values.get("outcome_reason") or ""),
        before=closing, tokens=usage.tokens())
    _segment_ended(segment, usage, ended)


def _segment_ended(segment: Segment, usage: UsageCounter, run: Any) -> None:
    """After the pause or finish: it recorded the usage when it was ours to write (``run``);
    otherwise the end belongs to whoever holds the run now."""
    if run is not None:
        usage.recorded = True
    else:
        _end_foreign(segment)


def _graph_input(graph: Any, config: dict[str, Any], segment: Segment,
                 lost: recovery.LostWork) -> Any:
    """What to stream: the resume answers, the initial state, or None (go on from the
    last checkpoint). A takeover looks at the checkpoints the lost worker left."""
    if not segment.takeover:
        if segment.resume is not None:
            return Command(resume=segment.resume)
        return segment.initial_state  # None continues from the last checkpoint
    snapshot = graph.get_state(config)
    waiting = {i.id for task in snapshot.tasks for i in task.interrupts}
    if segment.resume is not None and waiting & set(segment.resume):
        return Command(resume=segment.resume)  # the answers never reached the graph
    if not lost.started and segment.initial_state is not None:
        # Lost before its first checkpoint: start over (the thread's latest checkpoint
        # may be an earlier run's end, which has nothing left to run).
        return segment.initial_state
    return None


def _take_over(segment: Segment, mapper: EventMapper, lost: recovery.LostWork) -> list[Any]:
    """Go on in the AG-UI run the lost worker started, with its text: the steps it
    checkpointed do not run again, so what they said was read back from their
    checkpoints (``lost``). The mapper's text (what the segment's end appends to the
    assistant message) starts with it, and listeners get the part this AG-UI run has not
    carried yet."""
    reopened = recovery.reopen(segment.run_id, thread_id=segment.thread_id,
                               message_id=segment.assistant_message_id)
    events = list(reopened.events)
    seen = reopened.published_text
    # Published text that is not its start came from a step that runs again (it died
    # mid-step, or its model call was cut): that step streams its text anew, so
    # listeners are first told the message as it stands (a MESSAGES_SNAPSHOT replaces
    # the cut-off part instead of the repeat being appended to it).
    if lost.text.startswith(seen) and len(lost.text) > len(seen):
        events += mapper.on_message(AIMessage(content=lost.text[len(seen):]))
    elif not lost.text.startswith(seen):
        events += recovery.restated(message_id=segment.assistant_message_id, text=lost.text)
    mapper.text = lost.text
    return events


class _End:
    """Where the graph stopped, from its own stream instead of reading the checkpoint
    back (``get_state``, a round trip and its deserialization per segment).

    A ``values`` part comes after every step that changed the state, with the keys
    ``get_state`` reads. A step that raises questions adds one part per asking task,
    with its questions under ``__interrupt__`` (the questions a snapshot lists, as
    ``invoke`` collects them), then one with the step's finished tasks applied, as
    ``get_state`` shows them. So the last part's values are the checkpoint's
    (``tests/execution/test_segment_end.py`` holds LangGraph to that).
    """

    def __init__(self) -> None:
        self.values: dict[str, Any] | None = None
        self.raised: list[Any] = []

    def on_values(self, part: Any) -> None:
        if not isinstance(part, dict):
            return
        if INTERRUPT_KEY in part:
            self.raised.extend(part[INTERRUPT_KEY])
            part = {k: v for k, v in part.items() if k != INTERRUPT_KEY}
        self.values = part

    def result(self, graph: Any, config: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        """The state's values and the questions raised; from the checkpoint when the
        stream said nothing of them."""
        if self.values is not None:
            return dict(self.values), self.raised
        snapshot = graph.get_state(config)
        return dict(snapshot.values or {}), [i for task in snapshot.tasks
                                             for i in task.interrupts]


class _Ownership:
    """Is the run still this segment's? The heartbeat's flag and the stop notice
    (``execution.stop``) every time; the run's row (a round trip) once the last look is
    ``AGENTSITE_CANCEL_CHECK_SECONDS`` old. The claim was the first look."""

    def __init__(self, segment: Segment, lost: threading.Event | None,
                 stop: StopWatch | None = None) -> None:
        self.segment, self.lost, self.stop = segment, lost, stop
        self.looked = time.monotonic()

    def still(self) -> bool:
        if self.lost is not None and self.lost.is_set():
            return False
        if self.stop is not None and self.stop.stopped.is_set():
            return False
        now = time.monotonic()
        if now - self.looked < settings.AGENTSITE_CANCEL_CHECK_SECONDS:
            return True
        self.looked = now
        held = lifecycle.segment_held(self.segment)
        release_db_connections()  # a long segment keeps no pooled connection between looks
        return held


class _Publisher:
    """Live events are best effort: a Redis failure mid-segment is logged and the graph
    goes on (business state never depends on events; connect rebuilds from the DB).
    Fenced by the segment's lease: once superseded, the store drops them."""

    def __init__(self, run_id: str, lease: str) -> None:
        self.run_id = run_id
        self.fence = ("check", lease) if lease else None
        self.failed = False

    def send(self, events: list[Any]) -> None:
        if not events:
            return
        try:
            publish(self.run_id, events, fence=self.fence)
            self.failed = False
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            if not self.failed:
                log.warning("run %s: events lost, Redis unavailable: %s", self.run_id, exc)
            self.failed = True


def _end_foreign(segment: Segment) -> None:
    # The segment's end was refused: cancelled while it ran (the cancel ended the AG-UI
    # run), or taken over (the new owner ends it). Nothing more of ours goes out: the
    # event store's fence drops it anyway.
    log.info("run %s: the segment's end was not ours to write", segment.run_id)


def _as_json(value: Any) -> Any:
    # The interrupt's value is stored verbatim (its format is recognised when it is
    # stored, ``hitl.formats``); only what JSON cannot hold is converted.
    return json_state({"v": value})["v"]

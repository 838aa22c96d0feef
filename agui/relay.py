"""Relay one run's published AG-UI events from Redis to an HTTP response, and the
watchdog every stream of a run's events shares (this relay and the browser's SSE stream,
``streams.sse``).

The run channel is followed by ``streams.follow`` (stored events, then live, each once,
in id order). Events can still be lost: a segment that paused or finished while Redis
was down published nothing. So a stream keeps a ``RunWatch`` of what its client has
been told, and whenever the follower is quiet or says events may be lost, compares it
with the run's truth in the database (``run_truth``). Two checks in a row that disagree
(one is not enough: the worker publishes just after its commit) and the stream sends the
run's true state, built as a pause or a connect builds it (``truth_events``): the open
text messages, tool calls and steps closed (or a RUN_STARTED), STATE_SNAPSHOT,
MESSAGES_SNAPSHOT and the closing event of the run's status (``agui.outcomes``): paused
→ RUN_FINISHED with its open interrupts, finished → RUN_FINISHED with its outcome,
RUN_ERROR only for a run that failed. Postgres is touched only there, in one short call
on a worker thread that gives its connection back.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ag_ui.core import BaseEvent
from asgiref.sync import sync_to_async

from agui import outcomes
from agui.events import run_error, run_started, state_without_messages
from agui.open_state import ANCHORS, CLOSES, ENDS, OPENS, RunState
from execution.checkpointer import thread_values
from hitl.models import AgentInterrupt
from runs import registry
from runs.models import AgentRun, Message
from streams.db import release_db_connections
from streams.follow import ChannelEvents, Event, Flush, Idle, Keepalive
from streams.keys import run_channel
from streams.publish import wire

TERMINAL = ENDS
_TYPE_FIRST = '{"type":"'


@dataclass(frozen=True, slots=True)
class Wire:
    """A published event as the JSON it was stored with: what ag-ui-protocol's
    EventEncoder writes after ``data:`` (``streams.publish.wire``), so it is relayed
    as is, without a round trip through its pydantic class."""

    type: str
    data: str

    @classmethod
    def of(cls, data: Any) -> Wire:
        if not isinstance(data, str):  # not from our publisher: JSON it as is
            data = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        # Our publisher's JSON starts with the type (``type`` is the events' first field;
        # event types have no escapes): read it there instead of parsing every event,
        # snapshots included, on the event loop.
        if data.startswith(_TYPE_FIRST):
            end = data.find('"', len(_TYPE_FIRST))
            kind = data[len(_TYPE_FIRST):end]
            if end > 0 and kind.isupper() and kind.replace("_", "").isalpha():
                return cls(kind, data)
        return cls(json.loads(data)["type"], data)

    @classmethod
    def event(cls, event: BaseEvent) -> Wire:
        """An event made here, as our publisher would have stored it."""
        return cls(str(getattr(event.type, "value", event.type)), wire(event))

    def with_ids(self, **ids: str) -> str:
        """The JSON with ``threadId`` / ``runId`` replaced (``thread_id=``, ``run_id=``)."""
        body = json.loads(self.data)
        body.update({"threadId": ids["thread_id"], "runId": ids["run_id"]})
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Truth:
    """A run as the database has it: its status, and a paused run's open interrupts."""

    status: str
    interrupt_ids: frozenset[str] = frozenset()


def run_truth(run_id: object) -> Truth | None:
    """The run's truth (None: no such run), in one or two short queries."""
    status = AgentRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
    if status is None:
        return None
    if status != AgentRun.Status.PAUSED:
        return Truth(status)
    return Truth(status, frozenset(AgentInterrupt.objects.filter(
        run_id=run_id, status=AgentInterrupt.Status.PENDING)
        .values_list("interrupt_id", flat=True)))


def truth_events(run_id: object) -> list[Wire]:
    """The run's true state as one AG-UI run with the run's own ids: RUN_STARTED,
    STATE_SNAPSHOT (from the checkpointer: web processes run no graph), MESSAGES_SNAPSHOT
    (the conversation's messages) and the closing event of its status. Nothing if the
    run is live again (answered since the check): its events are on their way."""
    run = AgentRun.objects.filter(pk=run_id).first()
    if run is None:
        return [Wire.event(run_started(thread_id="", run_id=str(run_id))),
                Wire.event(run_error(message="run not found", code="run_gone"))]
    if run.status in AgentRun.LIVE:
        return []
    ids = {"thread_id": run.thread_id, "run_id": str(run.id)}
    state = (state_without_messages(thread_values(run.thread_id))
             if registry.get(run.agent) is not None else {})
    messages = list(Message.objects.filter(conversation_id=run.conversation_id)
                    .order_by("created_at", "id"))
    return [Wire.event(e) for e in (run_started(**ids), *outcomes.segment_end(
        run, state=state, messages=messages))]


def _released(func: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    def run(*args: Any) -> Any:
        try:
            return func(*args)
        finally:
            release_db_connections()  # an open stream holds no connection

    return sync_to_async(run, thread_sensitive=False)


check_truth = _released(run_truth)
fetch_truth = _released(truth_events)

# What a finished RUN_FINISHED / RUN_ERROR says, as the watch compares it with a status.
_ENDS = {AgentRun.Status.PAUSED: "interrupt", AgentRun.Status.CANCELLED: "cancelled",
         AgentRun.Status.FAILED: "error"}


class RunWatch(RunState):
    """What a stream has told its client about one run (``agui.open_state.RunState``: an
    open AG-UI run and what in it is open, how the last one ended), to compare with the
    run's truth."""

    def __init__(self) -> None:
        super().__init__()
        # Until a RUN_STARTED or an end is seen, what opened or closed (for ``seed``).
        self.since: list[Wire] | None = []
        self.strikes = 0

    def saw(self, event: Wire) -> None:
        kind = event.type
        if self.since is not None:
            if kind in ANCHORS:
                self.since = None
            elif kind in OPENS or kind in CLOSES:
                self.since.append(event)
        self.take(kind, event.data)

    def seed(self, earlier: list[Wire]) -> None:
        """Take in the events the client had before this stream began (one resumed
        after Last-Event-ID knows nothing of them), under those seen since."""
        since, self.since = self.since or [], None
        for event in [*earlier, *since]:
            self.saw(event)

    def agrees(self, truth: Truth | None) -> bool:
        """Whether the client's picture is right (or will be: the run is live)."""
        if truth is None:  # deleted: right once the client was told so
            return self.ended is not None and self.ended[0] == "error"
        if truth.status in AgentRun.LIVE:
            return True
        if self.ended is None:
            return False
        end, ids = self.ended
        if end != _ENDS.get(truth.status, "success"):
            return False
        # Interrupts answered since are gone from the truth without an event.
        return truth.interrupt_ids <= ids

    def strike(self, truth: Truth | None) -> bool:
        """Count a check; True on the second disagreeing one in a row."""
        self.strikes = 0 if self.agrees(truth) else self.strikes + 1
        return self.strikes >= 2

    def bridge(self, truth: list[Wire]) -> list[Wire]:
        """``truth`` (``truth_events``) as the client's next events: an open run's text
        messages, tool calls and steps are closed (``RunState.closers``) and the run goes
        on to its true end, else a new AG-UI run starts. The watch takes them in. No
        truth (the run is live again): nothing."""
        if not truth:
            self.strikes = 0
            return []
        if self.open:
            out = [Wire.event(e) for e in self.closers()] + truth[1:]
        else:
            out = truth
        for event in out:
            self.saw(event)
        self.strikes = 0
        return out


class RunEvents(ChannelEvents):
    """Stored and live events of one run channel, in id order, each exactly once, as
    ``Wire`` events."""

    def __init__(self, run_id: object) -> None:
        super().__init__(run_channel(run_id))

    def wrap(self, data: str) -> Wire:
        return Wire.of(data)


async def relay_segment(events: RunEvents, *, after: int,
                        check: Callable[[], Awaitable[Truth | None]],
                        truth: Callable[[], Awaitable[list[Wire]]],
                        started: Callable[[], BaseEvent], flushes: bool = False,
                        ) -> AsyncIterator[Wire | BaseEvent | Keepalive | Flush]:
    """One AG-UI run (a segment of our run): from the first RUN_STARTED after ``after``
    to its RUN_FINISHED / RUN_ERROR. Yields published events (``Wire``), the events
    ``started()`` made here, and ``Keepalive`` markers (``streams.follow``); ``flushes``:
    also ``Flush`` whenever no event is waiting, so a burst can go in one send.

    A RUN_ERROR with no RUN_STARTED before it (the run failed before the worker began
    the segment) gets a ``started()`` event in front. If the run stops being live and
    its end does not arrive (its events were lost: two checks in a row), the segment
    ends with the run's true state (``truth()``, through ``RunWatch.bridge``).
    """
    watch = RunWatch()
    # (A follower that wraps ``follow`` may not take ``flushes``: asked only when wanted.)
    items = events.follow(after=after, flushes=True) if flushes else events.follow(after=after)
    async for item in items:
        match item:
            case Keepalive() | Flush():
                yield item
                continue
            case Idle():
                made = watch.bridge(await truth()) if watch.strike(await check()) else []
                for event in made:
                    yield event
                if made:
                    return
                continue
            case Event(data=event):
                watch.strikes = 0
            case _:  # no flushes or access checks asked for
                continue
        kind = event.type
        if not watch.open:
            if kind == "RUN_STARTED":
                watch.saw(event)
                yield event
            elif kind == "RUN_ERROR":
                yield started()
                yield event
                return
            continue  # the tail of an earlier segment
        watch.saw(event)
        yield event
        if kind in TERMINAL:
            return

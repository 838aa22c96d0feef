"""Relay one run's published AG-UI events from Redis to an HTTP response.

The worker publishes every event twice (``streams.publish``): stored under its id in
the event store and fanned out on pub/sub. A relay listens first (the process's one
pub/sub reader, ``streams.pubsub``), then reads the stored events it missed, then
follows pub/sub; ids dedupe the overlap and a hole in the live ids is filled from the
store. Nothing here touches Postgres: callers pass a short ``check_status`` callback
for the watchdog.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ag_ui.core import BaseEvent

from runs.models import AgentRun
from streams.keys import counter_key, event_key, run_channel
from streams.pubsub import reader

TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
_TYPE_FIRST = '{"type":"'
KEEPALIVE = object()  # yielded when the stream should send an SSE comment
CATCH_UP = {"catch_up": True}  # queued after a (re)subscription: re-read the store


@dataclass(frozen=True, slots=True)
class Wire:
    """A published event as the JSON it was stored with: what ag-ui-protocol's
    EventEncoder writes after ``data:`` (``streams.publish.wire``), so it is relayed
    as is, without a round trip through its pydantic class."""

    type: str
    data: str

    @classmethod
    def of(cls, data: Any) -> Wire:
        if not isinstance(data, str):  # stored as an object (django-eventstream's send_event)
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

    def with_ids(self, **ids: str) -> str:
        """The JSON with ``threadId`` / ``runId`` replaced (``thread_id=``, ``run_id=``)."""
        body = json.loads(self.data)
        body.update({"threadId": ids["thread_id"], "runId": ids["run_id"]})
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


class RunEvents:
    """Stored and live events of one run channel, in id order, each exactly once."""

    def __init__(self, run_id: object) -> None:
        self.channel = run_channel(run_id)
        self.reader = reader()
        self.client = self.reader.client
        self.queue: asyncio.Queue = asyncio.Queue()

    # The reader's listener interface (streams.pubsub.Listener).
    def on_message(self, body: dict[str, Any]) -> None:
        if body.get("channel") == self.channel:
            self.queue.put_nowait(body)

    def on_subscribed(self) -> None:
        self.queue.put_nowait(CATCH_UP)

    async def __aenter__(self) -> RunEvents:
        # Listen before anything is read from the store, so no event falls between.
        self.reader.add(self)
        await self.reader.subscribed()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.reader.discard(self)

    async def counter(self) -> int:
        return int(await self.client.get(counter_key(self.channel)) or 0)

    async def stored(self, first: int, last: int) -> list[tuple[int, Wire]]:
        """Stored events with ids first..last (expired ones are skipped)."""
        if last < first:
            return []
        keys = [event_key(self.channel, i) for i in range(first, last + 1)]
        out = []
        for event_id, raw in zip(range(first, last + 1), await self.client.mget(keys),
                                 strict=True):
            if raw is not None:
                out.append((event_id, Wire.of(json.loads(raw)["data"])))
        return out

    async def follow(self, *, after: int, idle: float = 1.0, idle_max: float = 8.0,
                     keepalive: float = 15.0) -> AsyncIterator[tuple[int, Wire] | None]:
        """Events with id > ``after``: stored first, then live. Yields ``None`` after
        ``idle`` seconds without an event (for the caller's watchdog; each further quiet
        spell waits twice as long, up to ``idle_max``: a run queued behind busy workers
        is not polled every second) and ``KEEPALIVE`` every ``keepalive`` seconds of
        silence."""
        last = after
        for item in await self.stored(last + 1, await self.counter()):
            last = item[0]
            yield item
        quiet_since = time.monotonic()
        wait = idle
        while True:
            try:
                async with asyncio.timeout(wait):  # no task per event, as wait_for makes
                    body = await self.queue.get()
                wait = idle
            except TimeoutError:
                wait = min(idle_max, wait * 2)
                if time.monotonic() - quiet_since >= keepalive:
                    quiet_since = time.monotonic()
                    yield KEEPALIVE  # type: ignore[misc]
                # A quiet spell: look at the store too (the listener may have been
                # reconnecting), then let the caller check the run.
                for item in await self.stored(last + 1, await self.counter()):
                    last = item[0]
                    yield item
                yield None
                continue
            if body is CATCH_UP:
                for item in await self.stored(last + 1, await self.counter()):
                    last = item[0]
                    yield item
                continue
            event_id = int(body["pub_id"])
            if event_id <= last:
                continue
            if event_id > last + 1:
                for item in await self.stored(last + 1, event_id - 1):
                    last = item[0]
                    yield item
            last = event_id
            quiet_since = time.monotonic()
            yield event_id, Wire.of(body["data"])


async def relay_segment(events: RunEvents, *, after: int,
                  check_status: Callable[[], Awaitable[str | None]],
                  started: Callable[[], BaseEvent],
                  lost: Callable[[str], BaseEvent]) -> AsyncIterator[Wire | BaseEvent | object]:
    """One AG-UI run (a segment of our run): from the first RUN_STARTED after ``after``
    to its RUN_FINISHED / RUN_ERROR. Yields published events (``Wire``), the events
    ``started()`` / ``lost()`` made here, and KEEPALIVE markers.

    A RUN_ERROR with no RUN_STARTED before it (the run failed before the worker began
    the segment) gets a ``started()`` event in front. If the run stops being live
    and no end arrives (watchdog, two quiet checks), ends with ``lost(status)``.
    """
    open_run = False
    strikes = 0
    async for item in events.follow(after=after):
        if item is KEEPALIVE:
            yield KEEPALIVE
            continue
        if item is None:
            status = await check_status()
            strikes = strikes + 1 if status not in AgentRun.LIVE else 0
            if strikes >= 2:
                if not open_run:
                    yield started()
                yield lost(status or "gone")
                return
            continue
        strikes = 0
        _, event = item
        kind = event.type
        if not open_run:
            if kind == "RUN_STARTED":
                open_run = True
                yield event
            elif kind == "RUN_ERROR":
                yield started()
                yield event
                return
            continue  # the tail of an earlier segment
        yield event
        if kind in TERMINAL:
            return

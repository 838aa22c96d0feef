"""Relay one run's published AG-UI events from Redis to an HTTP response.

The worker publishes every event twice (``runs.publish``): stored under
``event:<channel>:<id>`` (ids from ``event_counter:<channel>``) and fanned out on
the pub/sub channel ``events_channel``. A relay listens first (one shared
subscription per process), then reads the stored events it missed, then follows
pub/sub; ids dedupe the overlap and a hole in the live ids is filled from the
store. Nothing here touches Postgres: callers pass a short ``check_status``
callback for the watchdog.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from ag_ui.core import BaseEvent, Event
from django.conf import settings
from pydantic import TypeAdapter

from runs.publish import run_channel

log = logging.getLogger(__name__)
_event_adapter: TypeAdapter[Any] = TypeAdapter(Event)

TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
# Run statuses during which a worker will still publish on the run's channel.
LIVE_STATUSES = ("queued", "running", "resuming")
KEEPALIVE = object()  # yielded when the stream should send an SSE comment


def parse_event(data: Any) -> BaseEvent:
    """A stored / published event (JSON text or dict) as its ag-ui-protocol class."""
    return _event_adapter.validate_python(json.loads(data) if isinstance(data, str) else data)


class _Hub:
    """One pub/sub subscription and one store client per process (event loop), shared by
    every open relay: a stream costs a queue, not a Redis connection."""

    def __init__(self) -> None:
        self.client = aioredis.Redis(**settings.EVENTSTREAM_REDIS)
        self.queues: dict[str, set[asyncio.Queue]] = {}
        self.listener: asyncio.Task | None = None
        self.ready = asyncio.Event()

    async def subscribed(self) -> None:
        if self.listener is None or self.listener.done():
            self.ready.clear()
            self.listener = asyncio.get_running_loop().create_task(self._listen())
        await self.ready.wait()

    async def _listen(self) -> None:
        pubsub = self.client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe("events_channel")
            self.ready.set()
            while True:
                message = await pubsub.get_message(timeout=30.0)
                if not message or message.get("type") != "message":
                    continue
                body = json.loads(message["data"])
                for queue in self.queues.get(body.get("channel"), ()):
                    queue.put_nowait(body)
        except Exception:  # noqa: BLE001 - relays fall back to the store; next stream resubscribes
            log.exception("AG-UI relay: pub/sub listener stopped")
        finally:
            self.ready.set()  # never leave a waiter hanging; it reads the store instead
            try:
                await pubsub.aclose()
            except Exception:  # noqa: BLE001
                pass


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Hub] = weakref.WeakKeyDictionary()


def _hub() -> _Hub:
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = _Hub()
    return hub


class RunEvents:
    """Stored and live events of one run channel, in id order, each exactly once."""

    def __init__(self, run_id: object) -> None:
        self.channel = run_channel(run_id)
        self.hub = _hub()
        self.client = self.hub.client
        self.queue: asyncio.Queue = asyncio.Queue()

    async def __aenter__(self) -> RunEvents:
        # Listen before anything is read from the store, so no event falls between.
        self.hub.queues.setdefault(self.channel, set()).add(self.queue)
        await self.hub.subscribed()
        return self

    async def __aexit__(self, *exc: object) -> None:
        queues = self.hub.queues.get(self.channel)
        if queues is not None:
            queues.discard(self.queue)
            if not queues:
                del self.hub.queues[self.channel]

    async def counter(self) -> int:
        return int(await self.client.get(f"event_counter:{self.channel}") or 0)

    async def stored(self, first: int, last: int) -> list[tuple[int, BaseEvent]]:
        """Stored events with ids first..last (expired ones are skipped)."""
        if last < first:
            return []
        keys = [f"event:{self.channel}:{i}" for i in range(first, last + 1)]
        out = []
        for event_id, raw in zip(range(first, last + 1), await self.client.mget(keys),
                                 strict=True):
            if raw is not None:
                out.append((event_id, parse_event(json.loads(raw)["data"])))
        return out

    async def follow(self, *, after: int, idle: float = 1.0,
                     keepalive: float = 15.0) -> AsyncIterator[tuple[int, BaseEvent] | None]:
        """Events with id > ``after``: stored first, then live. Yields ``None`` after
        ``idle`` seconds without an event (for the caller's watchdog) and
        ``KEEPALIVE`` every ``keepalive`` seconds of silence."""
        last = after
        for item in await self.stored(last + 1, await self.counter()):
            last = item[0]
            yield item
        quiet_since = time.monotonic()
        while True:
            try:
                body = await asyncio.wait_for(self.queue.get(), timeout=idle)
            except TimeoutError:
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
            event_id = int(body["pub_id"])
            if event_id <= last:
                continue
            if event_id > last + 1:
                for item in await self.stored(last + 1, event_id - 1):
                    last = item[0]
                    yield item
            last = event_id
            quiet_since = time.monotonic()
            yield event_id, parse_event(body["data"])


async def segment(events: RunEvents, *, after: int,
                  check_status: Callable[[], Awaitable[str | None]],
                  started: Callable[[], BaseEvent],
                  lost: Callable[[str], BaseEvent]) -> AsyncIterator[Any]:
    """One AG-UI run (a segment of our run): from the first RUN_STARTED after ``after``
    to its RUN_FINISHED / RUN_ERROR. Yields events (and KEEPALIVE markers).

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
            strikes = strikes + 1 if status not in LIVE_STATUSES else 0
            if strikes >= 2:
                if not open_run:
                    yield started()
                yield lost(status or "gone")
                return
            continue
        strikes = 0
        _, event = item
        kind = event.type.value if hasattr(event.type, "value") else str(event.type)
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

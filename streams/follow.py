"""Following one event channel: its stored events, then live ones, each once, in id order.

Every event is published twice (``streams.publish``): stored under its id in the event
store and fanned out on pub/sub. A follower listens first (the process's one pub/sub
reader, ``streams.pubsub``), then reads the stored events it missed, then follows
pub/sub; ids drop the overlap and repeats, and a hole in the live ids (two publishers of
one channel, or pub/sub reconnecting) is filled from the store. Used by the SSE streams
(``streams.sse``) and the AG-UI relay (``agui.relay``). Nothing here touches Postgres.

What the store cannot give is said with an ``IDLE`` (time for the caller's watchdog to
check the run in the database), yielded soon, not after a long quiet spell: after the
pub/sub reader reconnected (what was published meanwhile may never have been stored: a
publisher's Redis was down too), when stored ids are missing (expired or lost), and
while the store cannot be read at all (Redis down: the stream stays open, and the
watchdog works from the database alone).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from observability import metrics
from streams.keys import counter_key, event_key
from streams.pubsub import reader


@dataclass(frozen=True, slots=True)
class Event:
    """A stored or live event of the channel: its id, and its data (``wrap``ped)."""

    id: int
    data: Any


@dataclass(frozen=True, slots=True)
class Idle:
    """Time for the caller's watchdog to check the run (module docstring)."""


@dataclass(frozen=True, slots=True)
class Keepalive:
    """The stream has been silent: send an SSE comment."""


@dataclass(frozen=True, slots=True)
class Flush:
    """No event is waiting (yielded when asked for): write what you have."""


@dataclass(frozen=True, slots=True)
class Recheck:
    """The stream's user may have lost access (``streams.access``): check it now."""


@dataclass(frozen=True, slots=True)
class _CatchUp:
    """Queued after a (re)subscription or a dropped connection: re-read the store."""


# A read of the store after a given id asks for the counter and this many ids after it
# in one round trip (a segment's events since a stream last read are usually fewer).
READ_AHEAD = 16

IDLE, KEEPALIVE, FLUSH, RECHECK = Idle(), Keepalive(), Flush(), Recheck()
CATCH_UP = _CatchUp()
# What ``ChannelEvents.follow`` yields.
Item = Event | Idle | Keepalive | Flush | Recheck


class ChannelEvents:
    """Stored and live events of one channel, in id order, each exactly once. Items are
    ``(id, wrap(data))``, ``data`` being the event's JSON text as published."""

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self.reader = reader()
        self.client = self.reader.client
        self.queue: asyncio.Queue = asyncio.Queue()
        self.missing = 0  # stored ids found missing (expired, or lost with Redis's data)
        self.unreadable = False  # the last store read failed (Redis down)
        # Times what was published may have been lost for good: the fan-out connection
        # dropped, or the store became unreadable (a publisher's Redis was down too).
        self.outages = 0
        self.user_id: str | None = None  # set: yield RECHECK when this user's access changed
        # The stream's surface (``agentsite_event_delivery_seconds``); "": not measured.
        self.surface = ""

    def wrap(self, data: str) -> Any:
        return data

    def delivered(self, at: Any, path: str) -> None:
        """An event handed to the stream's client now: its publish → delivery latency."""
        if self.surface and at is not None:
            metrics.event_delivered(surface=self.surface, path=path, published_at=at)

    # The reader's listener interface (streams.pubsub.Listener).
    def on_message(self, body: dict[str, Any]) -> None:
        if body.get("channel") == self.channel:
            self.queue.put_nowait(body)
        elif self.user_id is not None and self.user_id in body.get("access", ()):
            self.queue.put_nowait(RECHECK)

    def on_subscribed(self) -> None:
        self.queue.put_nowait(CATCH_UP)

    def on_lost(self) -> None:
        # The connection dropped: what is published until the reader is back is in the
        # store only, if anywhere. Wake the follower now, not after its quiet spell.
        self.outages += 1
        self.queue.put_nowait(CATCH_UP)

    async def __aenter__(self) -> ChannelEvents:
        # Listen before anything is read from the store, so no event falls between.
        self.reader.add(self)
        await self.reader.subscribed()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.reader.discard(self)

    async def counter(self) -> int:
        return int(await self.client.get(counter_key(self.channel)) or 0)

    async def stored(self, first: int, last: int) -> list[tuple[int, Any]]:
        """Stored events with ids first..last (expired ones are skipped; ``missing``
        counts them)."""
        return [(event_id, data) for event_id, data, _at in await self.stored_at(first, last)]

    async def stored_at(self, first: int, last: int) -> list[tuple[int, Any, Any]]:
        """As ``stored``, with each event's publish time (``at``, None if it has none)."""
        if last < first:
            return []
        keys = [event_key(self.channel, i) for i in range(first, last + 1)]
        return self.found(first, last, await self.client.mget(keys))

    def found(self, first: int, last: int, raws: list[Any]) -> list[tuple[int, Any, Any]]:
        """The stored events of ids first..last from an MGET's answer (which may go on
        past ``last``: ignored); ``missing`` counts the ids not there."""
        if last < first:
            return []
        out = []
        for event_id, raw in zip(range(first, last + 1), raws, strict=False):
            if raw is not None:
                stored = json.loads(raw)
                out.append((event_id, self.wrap(stored["data"]), stored.get("at")))
        self.missing += last - first + 1 - len(out)
        return out

    async def counted_after(self, last: int) -> list[tuple[int, Any, Any]]:
        """Stored events after ``last`` up to the counter, in one round trip when they
        are at most ``READ_AHEAD``: the counter and the next ids in one pipeline, run in
        that order (what is stored past the counter read is left for pub/sub or the next
        read, as when the counter is read alone first)."""
        ahead = [event_key(self.channel, i) for i in range(last + 1, last + 1 + READ_AHEAD)]
        pipe = self.client.pipeline(transaction=False)
        pipe.get(counter_key(self.channel))
        pipe.mget(ahead)
        counter, raws = await pipe.execute()
        top = int(counter or 0)
        found = self.found(last + 1, min(top, last + READ_AHEAD), raws)
        return found + await self.stored_at(last + 1 + READ_AHEAD, top)

    async def store_after(self, last: int, upto: int | None = None
                          ) -> list[tuple[int, Any, Any]]:
        """Stored events after ``last`` (up to ``upto``, else the counter), with their
        publish times; on a Redis error none, and ``unreadable`` is set: the caller tries
        again later."""
        try:
            if upto is None:
                found = await self.counted_after(last)
            else:
                found = await self.stored_at(last + 1, upto)
        except (RedisError, OSError):
            self.outages += not self.unreadable
            self.unreadable = True
            return []
        self.unreadable = False
        return found

    async def next_queued(self, wait: float) -> Any:
        """What the listener queued next (an event body, ``RECHECK``, a catch-up), or None
        after ``wait`` seconds without any."""
        try:
            async with asyncio.timeout(wait):  # no task per event, as wait_for makes
                return await self.queue.get()
        except TimeoutError:
            return None

    async def follow(self, *, after: int, idle: float = 1.0, idle_max: float = 8.0,
                     keepalive: float = 15.0, flushes: bool = False) -> AsyncIterator[Item]:
        """Events with id > ``after``: stored first, then live. Yields ``IDLE`` after
        ``idle`` seconds without an event (for the caller's watchdog; each further quiet
        spell waits twice as long, up to ``idle_max``: a run queued behind busy workers
        is not polled every second), and also at once, with the next waits back to
        ``idle``, when events may be lost (module docstring). ``KEEPALIVE`` every
        ``keepalive`` seconds of silence. ``flushes``: also yield ``FLUSH`` whenever no
        event is waiting, so a caller can write a burst (one commit's events) in one send.

        One loop reads the store, whatever asked for it: the start, a quiet spell (the
        listener may have been reconnecting), a (re)subscription, a hole in the live ids.
        """
        last, wait, quiet_since = after, idle, time.monotonic()
        read, upto = True, None  # read the store (up to ``upto``, else the counter)
        then: Event | Idle | None = None  # what follows the read
        then_at: Any = None  # its publish time
        suspect = False  # events may be gone: the watchdog looks now, and soon again
        task = asyncio.current_task()
        while True:
            if task is not None and task.cancelling():
                # The answer was cancelled (its client went: ASGI's http.disconnect) but
                # the cancel was absorbed below us: seen under load, the task stays
                # "cancelling" while the stream follows on, never told (a waiting run's
                # ``on_disconnect=cancel`` never happened). This loop comes round at
                # least every ``idle_max`` seconds, so the stream stops within those.
                raise asyncio.CancelledError
            if read:
                missing = self.missing
                for event_id, data, at in await self.store_after(last, upto):
                    last = event_id
                    self.delivered(at, "stored")
                    yield Event(event_id, data)
                grew = self.missing > missing
                if isinstance(then, Idle):  # after a quiet spell the caller checks the run anyway
                    wait = idle if grew else wait
                    yield IDLE
                else:
                    suspect = suspect or self.unreadable or grew
                read, upto = False, None
            if isinstance(then, Event):
                last, quiet_since = then.id, time.monotonic()
                self.delivered(then_at, "live")
                yield then
            then = None
            if suspect:
                suspect, wait = False, idle
                yield IDLE
            if flushes and self.queue.empty():
                yield FLUSH
            body = await self.next_queued(wait)
            if body is None:  # a quiet spell
                wait = min(idle_max, wait * 2)
                if time.monotonic() - quiet_since >= keepalive:
                    quiet_since = time.monotonic()
                    yield KEEPALIVE
                read, then = True, IDLE
                continue
            wait = idle
            match body:
                case Recheck():
                    yield RECHECK
                case _CatchUp():
                    # (Re)subscribed, or the connection dropped: read the store, and have
                    # the run checked (the store lacks what was published while Redis
                    # was down).
                    read, suspect = True, True
                case {"pub_id": pub_id} if int(pub_id) > last:
                    then, then_at = Event(int(pub_id), self.wrap(body["data"])), body.get("at")
                    if then.id > last + 1:  # a hole: fill it from the store first
                        read, upto = True, then.id - 1

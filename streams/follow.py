"""Following one event channel: its stored events, then live ones, each once, in id order.

Every event is published twice (``streams.publish``): stored under its id in the event
store and fanned out on pub/sub. A follower listens first (the process's one pub/sub
reader, ``streams.pubsub``), then reads the stored events it missed, then follows
pub/sub; ids drop the overlap and repeats, and a hole in the live ids (two publishers of
one channel, or pub/sub reconnecting) is filled from the store. Used by the SSE streams
(``streams.sse``) and the AG-UI relay (``agui.relay``). Nothing here touches Postgres.

What the store cannot give is said with a ``None`` (time for the caller's watchdog to
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
from typing import Any

from redis.exceptions import RedisError

from streams.keys import counter_key, event_key
from streams.pubsub import reader

KEEPALIVE = object()  # yielded when the stream should send an SSE comment
FLUSH = object()  # yielded (if asked for) when no event is waiting: write what you have
CATCH_UP = {"catch_up": True}  # queued after a (re)subscription: re-read the store
RECHECK = object()  # yielded when the stream's user may have lost access (streams.access)


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

    def wrap(self, data: str) -> Any:
        return data

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
        if last < first:
            return []
        keys = [event_key(self.channel, i) for i in range(first, last + 1)]
        out = []
        for event_id, raw in zip(range(first, last + 1), await self.client.mget(keys),
                                 strict=True):
            if raw is not None:
                out.append((event_id, self.wrap(json.loads(raw)["data"])))
        self.missing += last - first + 1 - len(out)
        return out

    async def store_after(self, last: int, upto: int | None = None) -> list[tuple[int, Any]]:
        """Stored events after ``last`` (up to ``upto``, else the counter); on a Redis
        error none, and ``unreadable`` is set: the caller tries again later."""
        try:
            top = await self.counter() if upto is None else upto
            found = await self.stored(last + 1, top)
        except (RedisError, OSError):
            self.outages += not self.unreadable
            self.unreadable = True
            return []
        self.unreadable = False
        return found

    async def follow(self, *, after: int, idle: float = 1.0, idle_max: float = 8.0,
                     keepalive: float = 15.0,
                     flushes: bool = False) -> AsyncIterator[tuple[int, Any] | None]:
        """Events with id > ``after``: stored first, then live. Yields ``None`` after
        ``idle`` seconds without an event (for the caller's watchdog; each further quiet
        spell waits twice as long, up to ``idle_max``: a run queued behind busy workers
        is not polled every second), and also at once, with the next waits back to
        ``idle``, when events may be lost (module docstring). ``KEEPALIVE`` every
        ``keepalive`` seconds of silence. ``flushes``: also yield ``FLUSH`` whenever no
        event is waiting, so a caller can write a burst (one commit's events) in one send."""
        last = after
        missing = self.missing
        for item in await self.store_after(last):
            last = item[0]
            yield item
        quiet_since = time.monotonic()
        wait = idle
        suspect = self.unreadable or self.missing > missing
        while True:
            if suspect:
                # Events may be gone: the watchdog looks now, and soon again.
                suspect = False
                wait = idle
                yield None
            if flushes and self.queue.empty():
                yield FLUSH  # type: ignore[misc]
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
                missing = self.missing
                for item in await self.store_after(last):
                    last = item[0]
                    yield item
                if self.missing > missing:
                    wait = idle
                yield None
                continue
            if body is RECHECK:
                yield RECHECK  # type: ignore[misc]
                continue
            missing = self.missing
            if body is CATCH_UP:
                # (Re)subscribed, or the connection dropped: read the store, and have the
                # run checked (the store lacks what was published while Redis was down).
                for item in await self.store_after(last):
                    last = item[0]
                    yield item
                suspect = True
                continue
            event_id = int(body["pub_id"])
            if event_id <= last:
                continue
            if event_id > last + 1:
                for item in await self.store_after(last, event_id - 1):
                    last = item[0]
                    yield item
                suspect = self.unreadable or self.missing > missing
            last = event_id
            quiet_since = time.monotonic()
            yield event_id, self.wrap(body["data"])

"""The one Redis pub/sub reader of a web process (one per event loop), shared by every
open stream: SSE (``streams.sse``) and AG-UI (``agui.relay``).

It subscribes to ``PUBSUB_CHANNEL``, hands each message to its listeners, and when the
connection drops it tells them (once per drop) and reconnects. After every
(re)subscription it tells the listeners, so each open stream re-reads the store from its
last id: what was published while nobody listened is in the store only, and what was
published while Redis was down is nowhere (each stream's watchdog then checks the run).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import weakref
from typing import Any, Protocol

import redis.asyncio as aioredis
from django.conf import settings

from streams.keys import PUBSUB_CHANNEL

log = logging.getLogger(__name__)

RECONNECT_WAIT = 0.5
# Store reads of every open stream share the reader's client. redis-py's default pool
# raises at 100 connections in use, which cut streams opened in a burst (hundreds of
# AG-UI connects at once) after their 200; this pool makes a read wait for a connection.
READ_CONNECTIONS = 100
READ_WAIT_SECONDS = 20


def client_name(pid: int | None = None) -> str:
    """The Redis client name of a process's event connections."""
    return f"agentsite-events-{pid or os.getpid()}"


class Listener(Protocol):
    def on_message(self, body: dict[str, Any]) -> None:
        """``body``: ``{channel, event_type, data, pub_id}`` as streams.publish sends it."""

    def on_subscribed(self) -> None:
        """The reader (re)subscribed: anything published meanwhile is in the store only."""

    def on_lost(self) -> None:
        """The connection dropped (told once, not at every failed reconnect)."""


class Reader:
    def __init__(self) -> None:
        # Named, so an operator (or a test) can tell which process a subscription is.
        self.client = aioredis.Redis.from_pool(aioredis.BlockingConnectionPool(
            **settings.EVENTSTREAM_REDIS, client_name=client_name(),
            max_connections=READ_CONNECTIONS, timeout=READ_WAIT_SECONDS))
        self.listeners: set[Listener] = set()
        self.task: asyncio.Task | None = None
        self.ready = asyncio.Event()
        self.connected = False

    def add(self, listener: Listener) -> None:
        self.listeners.add(listener)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    def discard(self, listener: Listener) -> None:
        self.listeners.discard(listener)

    async def subscribed(self) -> None:
        """Wait for the first subscription (or the first failure: callers then read the
        store, which is always complete)."""
        await self.ready.wait()

    async def _run(self) -> None:
        while True:
            pubsub = self.client.pubsub()
            try:
                await pubsub.subscribe(PUBSUB_CHANNEL)
                async for message in pubsub.listen():
                    if message["type"] == "subscribe":
                        if self.connected:
                            # Subscribed again while subscribed: redis-py reconnected by
                            # itself (its retry), and what was published meanwhile is lost.
                            self._tell(lambda li: li.on_lost())
                        self.ready.set()
                        self.connected = True
                        self._tell(lambda li: li.on_subscribed())
                    elif message["type"] == "message":
                        body = json.loads(message["data"])
                        self._tell(lambda li, body=body: li.on_message(body))
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - reconnect whatever broke the connection
                log.warning("event pub/sub connection lost; reconnecting", exc_info=True)
                self.ready.set()  # never leave a waiter hanging; it reads the store instead
                if self.connected:
                    self.connected = False
                    self._tell(lambda li: li.on_lost())
                await asyncio.sleep(RECONNECT_WAIT)
            finally:
                try:
                    await pubsub.aclose()
                except Exception:  # noqa: BLE001 - the connection is already gone
                    pass

    def _tell(self, call: Any) -> None:
        for listener in list(self.listeners):
            try:
                call(listener)
            except Exception:  # noqa: BLE001 - one bad listener must not stop the others
                log.exception("event listener failed")


_readers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Reader] = (
    weakref.WeakKeyDictionary())


def reader() -> Reader:
    """This event loop's reader."""
    loop = asyncio.get_running_loop()
    found = _readers.get(loop)
    if found is None:
        found = _readers[loop] = Reader()
    return found

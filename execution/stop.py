"""The cancel's stop notice: how a running segment learns of its run's cancel at once.

``run_cancel`` publishes the run's id on ``STOP_CHANNEL`` once it commits
(``stop_on_commit``). Each worker process keeps one subscription to it (``_Listener``, a
thread) and hands a notice to the ``StopWatch`` of that run, if one of its segments runs.
A task starts its watch before it claims the segment, and the watch waits until the
subscription is up, so a cancel that commits after the claim is always heard; one before
is refused by the claim. On the notice the watch cuts the segment's model calls in flight
(``execution.calls``) and the executor stops before its next step.

Without Redis the notice is lost: the segment stops at its next step as before (it looks
at the run's row between steps) or at its lease's next renewal
(``execution.reaper.Heartbeat``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from django.db import transaction

from agentsite.process_thread import OnePerProcess

log = logging.getLogger(__name__)

STOP_CHANNEL = "agentsite:stop"
# How long a watch waits for the process's subscription when it is not up.
SUBSCRIBE_WAIT_SECONDS = 2.0
RECONNECT_WAIT = 0.5


def _redis() -> redis.Redis:
    # Short timeouts: a cancel does not wait on a dead Redis.
    return redis.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION, socket_timeout=2,
                       socket_connect_timeout=2)


_publisher: redis.Redis | None = None


def stop_on_commit(run_id: object) -> None:
    """Tell the run's segment, if one runs, to stop now: once the transaction commits."""
    def send() -> None:
        global _publisher
        try:
            if _publisher is None:
                _publisher = _redis()
            _publisher.publish(STOP_CHANNEL, str(run_id))
        except redis.RedisError as exc:
            log.warning("run %s: stop notice not sent (%s); the segment stops at its "
                        "next step", run_id, exc)

    transaction.on_commit(send)


class StopWatch:
    """One segment's ear for its run's stop notice, from ``start`` (the process's
    subscription up when it returns, if Redis answers) to ``close``. On the notice it
    sets ``stopped`` and calls what ``on_stop`` registered, once, on the listener's
    thread."""

    def __init__(self, run_id: object) -> None:
        self.run_id = str(run_id)
        self.stopped = threading.Event()
        self._callbacks: list[Callable[[], Any]] = []
        self._lock = threading.Lock()

    def start(self) -> StopWatch:
        listener = _Listener.of_this_process()
        listener.add(self)
        if not listener.ready.wait(SUBSCRIBE_WAIT_SECONDS):
            log.warning("run %s: not listening for a cancel (Redis); it is seen between "
                        "steps", self.run_id)
        return self

    def close(self) -> None:
        _Listener.of_this_process().discard(self)

    def on_stop(self, callback: Callable[[], Any]) -> None:
        with self._lock:
            if not self.stopped.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def stop(self) -> None:
        with self._lock:
            if self.stopped.is_set():
                return
            self.stopped.set()
            callbacks, self._callbacks = self._callbacks, []
        log.info("run %s: cancelled; cutting its model calls in flight", self.run_id)
        for callback in callbacks:
            try:
                callback()
            except Exception:  # noqa: BLE001 - the other callbacks still run
                log.exception("run %s: a stop callback failed", self.run_id)


class _Listener(OnePerProcess):
    """This process's subscription to ``STOP_CHANNEL``."""

    def __init__(self) -> None:
        super().__init__(name="agentsite-stop")
        self.ready = threading.Event()
        self.watches: dict[str, set[StopWatch]] = {}
        self.lock = threading.Lock()

    def add(self, watch: StopWatch) -> None:
        with self.lock:
            self.watches.setdefault(watch.run_id, set()).add(watch)

    def discard(self, watch: StopWatch) -> None:
        with self.lock:
            found = self.watches.get(watch.run_id)
            if found is not None:
                found.discard(watch)
                if not found:
                    del self.watches[watch.run_id]

    def run(self) -> None:
        lost = False
        while True:
            client = _redis()
            try:
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(STOP_CHANNEL)
                self.ready.set()
                lost = False
                while True:
                    message = pubsub.get_message(timeout=1)
                    if message is not None and message.get("type") == "message":
                        self.deliver(message["data"].decode())
            except (redis.RedisError, OSError) as exc:
                self.ready.clear()
                if not lost:  # once per outage
                    log.warning("stop notices: Redis connection lost (%s); reconnecting", exc)
                lost = True
            finally:
                client.close()
            time.sleep(RECONNECT_WAIT)

    def deliver(self, run_id: str) -> None:
        with self.lock:
            watches = list(self.watches.get(run_id, ()))
        for watch in watches:
            watch.stop()

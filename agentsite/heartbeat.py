"""Worker heartbeats in Redis, and beat's last sweep, for ``GET /healthz``.

Each worker process writes ``now`` under its name into one sorted set per queue every
``INTERVAL`` seconds, from a daemon thread started when the worker is ready; a worker
seen within ``ALIVE_SECONDS`` is alive. Reading is one ZRANGEBYSCORE: cheap enough for
a health check polled every second. A SIGKILLed worker simply stops being seen.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

import redis
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

log = logging.getLogger(__name__)

INTERVAL = 5.0
ALIVE_SECONDS = 3 * INTERVAL
_stop = threading.Event()
_client: redis.Redis | None = None


def client() -> redis.Redis:
    """A Redis client with short timeouts: a health check must not hang on a dead Redis."""
    global _client
    if _client is None:
        _client = redis.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION, socket_timeout=2,
                              socket_connect_timeout=2)
    return _client


def _key() -> str:
    # Per queue: test sessions and deployments sharing one Redis see only their workers.
    return f"agentsite:workers:{settings.CELERY_TASK_DEFAULT_QUEUE}"


def beat(name: str, now: float | None = None) -> None:
    pipe = client().pipeline()
    now = time.time() if now is None else now
    pipe.zadd(_key(), {name: now})
    pipe.zremrangebyscore(_key(), "-inf", now - 3600)  # forget long-gone workers
    pipe.execute()


def alive(now: float | None = None) -> list[str]:
    """Names of the workers seen within ALIVE_SECONDS."""
    now = time.time() if now is None else now
    return sorted(m.decode() for m in client().zrangebyscore(_key(), now - ALIVE_SECONDS, "+inf"))


def _beat_key() -> str:
    return f"agentsite:beat:{settings.CELERY_TASK_DEFAULT_QUEUE}"


def sweep_tick(now: float | None = None) -> None:
    """The beat-sent sweep ran: its time, for ``GET /healthz`` (is beat alive?)."""
    client().set(_beat_key(), time.time() if now is None else now, ex=86400)


def last_sweep() -> float | None:
    """When the beat-sent sweep last ran (epoch seconds), or None if not within a day."""
    found = client().get(_beat_key())
    return float(found) if found is not None else None


def _loop(name: str) -> None:
    while not _stop.is_set():
        try:
            beat(name)
        except redis.RedisError as exc:  # Redis down: keep trying; the worker reconnects too
            log.debug("heartbeat not written: %s", exc)
        _stop.wait(INTERVAL)


_name = ""


@worker_ready.connect
def _start(sender: Any = None, **_: Any) -> None:
    global _name
    _name = f"{getattr(sender, 'hostname', None) or socket.gethostname()}:{os.getpid()}"
    _stop.clear()
    threading.Thread(target=_loop, args=(_name,), name="heartbeat", daemon=True).start()


@worker_shutdown.connect
def _end(**_: Any) -> None:
    _stop.set()
    if _name:
        try:
            client().zrem(_key(), _name)
        except redis.RedisError:
            pass

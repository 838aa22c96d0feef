"""Pooled request threads: an ASGI wrapper around Django's stock handler.

Django's ASGI handler gives each request a ``ThreadSensitiveContext()``: a new thread for
the request's thread-sensitive calls (its sync middleware, sync views, the request
signals, ``response.close``), and another new thread to join it when the request ends.
asgiref documents an ``executor`` for that context (asgiref 3.13 README, "Thread-sensitive
contexts": the caller owns the executor and "may use it again for a later block, for
example in a pool"; only the outermost context sets it, so Django's own is then a no-op).
Here each request takes a one-thread executor from a pool and gives it back when the
work it left in its thread is done. Threads keep their thread-local connections (the
event store's, Django's pooled one given back by ``request_finished`` as before) from one
request to the next.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext

# Idle request threads kept for the next requests; more run at once when needed.
IDLE_THREADS = 32


class RequestThreads:
    """One-thread executors for requests: taken when a request starts, given back when
    the work it left in its thread is done (a request cancelled mid-call still has its
    call running there)."""

    def __init__(self, idle_max: int) -> None:
        self.idle: list[ThreadPoolExecutor] = []
        self.idle_max = idle_max
        self.lock = threading.Lock()

    def take(self) -> ThreadPoolExecutor:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        # A one-thread executor runs in order: once this runs, the thread is free.
        executor.submit(self.idle_again, executor)

    def idle_again(self, executor: ThreadPoolExecutor) -> None:
        with self.lock:
            if len(self.idle) < self.idle_max:
                self.idle.append(executor)
                return
        executor.shutdown(wait=False)  # its thread ends once this call returns


def with_request_threads(app: Any, threads: RequestThreads | None = None) -> Any:
    """``app`` with each HTTP request's thread-sensitive calls on a pooled thread."""
    pool = threads or RequestThreads(IDLE_THREADS)

    async def application(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        executor = pool.take()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await app(scope, receive, send)
        finally:
            pool.give_back(executor)

    return application

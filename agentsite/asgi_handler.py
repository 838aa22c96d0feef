"""Django's ASGI handler with the middleware chain and the view in one thread hop.

Django builds its middleware chain for ASGI in async mode, so each sync middleware
step (``process_request``, ``process_view``, ``process_response`` of the
``MiddlewareMixin`` ones) and the sync view is a ``sync_to_async`` hop of its own: 16
hops per API request here (counted), each a round trip between the event loop and the
request's thread. Every view of ours under this handler is sync (the REST API, the
pages, the admin; the SSE views are sync views returning an async stream), so the chain
is built as under WSGI, all sync, and run with one hop into the request's thread: the
same middlewares in the same order, and Django's own sync request path
(``BaseHandler._get_response``: resolve, ``process_view``, the view, template
responses, exceptions). An async view would still work (Django calls it through
``async_to_sync``), at the cost of the hops back. Streaming responses are still sent
from the event loop by the ASGI handler. The AG-UI endpoints have their own handler
(``agui.asgi``).

Each request still gets a thread of its own for its thread-sensitive calls (the request
signals, the chain, ``response.close``), as Django's handler gives it, but taken from a
pool of one-thread executors (asgiref's ``ThreadSensitiveContext(executor=...)``) instead
of a new thread per request, joined by yet another new thread when the request ends.
Threads keep their thread-local connections (the event store's, Django's pooled one
given back by ``request_finished`` as before) from one request to the next.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler

# Idle request threads kept for the next requests; more run at once when needed.
IDLE_THREADS = 32


class _RequestThreads:
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
        executor.submit(self._idle_again, executor)

    def _idle_again(self, executor: ThreadPoolExecutor) -> None:
        with self.lock:
            if len(self.idle) < self.idle_max:
                self.idle.append(executor)
                return
        executor.shutdown(wait=False)  # its thread ends once this call returns


request_threads = _RequestThreads(IDLE_THREADS)


class SyncChainASGIHandler(ASGIHandler):
    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not "
                             f"{scope['type']}.")
        executor = request_threads.take()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            request_threads.give_back(executor)

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        # The top of the sync chain, adapted once (Django's own adapter: sync_to_async
        # into the request's thread-sensitive thread).
        self._middleware_chain = self.adapt_method_mode(True, self._middleware_chain, False)

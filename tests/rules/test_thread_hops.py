"""Thread hops per token request under ASGI, pinned (issue 37).

Django's ASGI handler runs every sync piece of a request (a sync-only middleware, a
``MiddlewareMixin`` hook under an async stack, a sync view, the request signals) through
asgiref's ``sync_to_async``: a hop to the request's thread and back, paid in CPU and
latency on every request. The stack here is the production one, ``agentsite.asgi``'s
wrapper (``with_request_threads``) around Django's ASGI handler, driven in process on an
event loop of our own that counts every ``run_in_executor``: each ``sync_to_async`` call
goes through it, to the request's thread (thread-sensitive, nested or not) or to the
loop's default executor (``thread_sensitive=False``: the AG-UI view's DB step).

A change that adds a hop fails here until its budget line is raised on purpose.
"""

from __future__ import annotations

import asyncio
import functools
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core.asgi import get_asgi_application

from agentsite.request_threads import with_request_threads

pytestmark = pytest.mark.django_db(transaction=True)

# path → (request-thread hops, DB-step hops, what they are).
BUDGET: dict[str, tuple[int, int, str]] = {
    # Every middleware runs on the event loop (agentsite.loop_middleware). Left: Django's
    # request_started receivers, the DRF view (sync), its response's render, the close
    # (request_finished). Before: 7 (the sync middleware's thread, CSRF's and the form
    # guard's process_view each in their own hop).
    "GET /api/agents/": (4, 0, "request_started, the view, render, close"),
    # request_started and close; the view is async: its one DB step off the request
    # thread, and Django's log line of a 4xx answer (this resume names no open question).
    # Before: 5 + 2.
    "POST /agui/dev/": (2, 2, "request_started, close; the view's DB step, the 404's log"),
}


class CountingLoop(asyncio.SelectorEventLoop):
    """An event loop that records every call it runs in a thread: asgiref's
    ``sync_to_async`` (thread-sensitive or not, nested in an ``async_to_sync`` or not)
    goes through ``run_in_executor``."""

    def __init__(self) -> None:
        super().__init__()
        self.hops: list[tuple[bool, str]] = []  # (on the default executor, what)

    def run_in_executor(self, executor: Any, func: Any, *args: Any) -> asyncio.Future:
        # asgiref hands over partial(thread_handler, ..., partial(the sync call, ...)).
        what = func.args[-1] if isinstance(func, functools.partial) and func.args else func
        what = getattr(what, "func", what)
        self.hops.append((executor is None, getattr(what, "__qualname__", repr(what))))
        return super().run_in_executor(executor, func, *args)


async def _call(app: Any, method: str, path: str, token: str, body: bytes) -> int:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "server": ("testserver", 80),
             "client": ("127.0.0.1", 5000),
             "headers": [(b"host", b"testserver"), (b"authorization", f"Token {token}".encode()),
                         (b"content-type", b"application/json"),
                         (b"content-length", str(len(body)).encode())]}
    sent: list[dict] = []
    chunks = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        if chunks:
            return chunks.pop()
        await asyncio.Event().wait()  # no disconnect while the answer is written
        return {}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def hops_of(method: str, path: str, token: str, body: bytes = b"") -> tuple[int, list, list]:
    """Status, request-thread hops and DB-step (default executor) hops of one request."""
    app = with_request_threads(get_asgi_application())
    loop = CountingLoop()

    def run() -> int:
        with asyncio.Runner(loop_factory=lambda: loop) as runner:
            return runner.run(_call(app, method, path, token, body))

    # A thread of its own: an earlier test may have left a loop running in this one.
    with ThreadPoolExecutor(max_workers=1) as thread:
        status = thread.submit(run).result()
    return (status, [what for default, what in loop.hops if not default],
            [what for default, what in loop.hops if default])


def _resume_body() -> bytes:
    return json.dumps({"threadId": "t-hops", "runId": "r", "state": {}, "messages": [],
                       "tools": [], "context": [], "forwardedProps": {},
                       "resume": [{"interruptId": "nope", "status": "resolved",
                                   "payload": {}}]}).encode()


@pytest.mark.parametrize("what", list(BUDGET))
def test_thread_hops_per_token_request(users, what):
    method, path = what.split(" ")
    body = _resume_body() if method == "POST" else b""
    hops_of(method, path, users["owner_token"], body)  # warm: first-request imports
    status, thread_hops, step_hops = hops_of(method, path, users["owner_token"], body)
    # The resume names no open question: a 404 after the whole path (auth, the lookup).
    assert status == (200 if method == "GET" else 404)
    want, want_steps, why = BUDGET[what]
    assert (len(thread_hops), len(step_hops)) == (want, want_steps), \
        f"{what}: {thread_hops} + {step_hops}; budget {want} + {want_steps} ({why})"

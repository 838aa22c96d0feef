"""Pooled request threads around Django's stock ASGI handler (agentsite.request_threads)."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from django.core.asgi import get_asgi_application

from agentsite.request_threads import RequestThreads, with_request_threads


def _serve(app, path: str) -> httpx.Response:  # noqa: ANN001
    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            return await c.get(path)

    # A thread of its own: the browser tests' sync Playwright leaves a loop running here.
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, get()).result()


def test_requests_reuse_a_pooled_thread_for_their_thread_sensitive_calls():
    from django.core.signals import request_finished, request_started

    app = with_request_threads(get_asgi_application(), RequestThreads(idle_max=1))
    seen: list[tuple[str, threading.Thread]] = []  # the objects: an ident can be reused

    def started(**kwargs):  # noqa: ANN003, ANN202
        seen.append(("started", threading.current_thread()))

    def finished(**kwargs):  # noqa: ANN003, ANN202
        seen.append(("finished", threading.current_thread()))

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        first = _serve(app, "/api/runs/")
        # Django's request_finished closes (gives back) the request thread's database
        # connection: it must run in the thread the view ran in, as with Django's handler.
        second = _serve(app, "/api/runs/")
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    # The whole middleware stack ran: DRF's 401 with the security headers.
    assert first.status_code == second.status_code == 401
    assert first.headers["X-Frame-Options"] == "DENY"
    assert "Content-Security-Policy" in first.headers
    assert [kind for kind, _ in seen] == ["started", "finished"] * 2
    # One pooled thread served both, start to end (Django's handler alone: a new one each).
    assert all(thread is seen[0][1] for _, thread in seen), seen
    assert seen[0][1].name.startswith("request")


def test_a_request_thread_is_idle_again_only_when_its_work_is_done():
    pool = RequestThreads(idle_max=1)
    executor = pool.take()
    release = threading.Event()
    running = executor.submit(release.wait)  # a call a cancelled request left running
    pool.give_back(executor)
    assert pool.idle == []  # still busy: not handed to another request
    assert pool.take() is not executor
    release.set()
    running.result(timeout=5)
    for _ in range(100):
        if pool.idle:
            break
        time.sleep(0.01)
    assert pool.idle == [executor]
    assert pool.take() is executor


def test_request_threads_beyond_the_idle_limit_end():
    pool = RequestThreads(idle_max=1)
    a, b = pool.take(), pool.take()
    assert a is not b  # requests at once get threads of their own
    a_thread = a.submit(threading.current_thread).result()
    b_thread = b.submit(threading.current_thread).result()
    pool.give_back(a)
    pool.give_back(b)
    a_thread.join(timeout=0.2)
    b_thread.join(timeout=5)
    ended = [t for t in (a_thread, b_thread) if not t.is_alive()]
    assert len(ended) == 1 and len(pool.idle) == 1
    assert pool.idle[0] is (b if ended[0] is a_thread else a)

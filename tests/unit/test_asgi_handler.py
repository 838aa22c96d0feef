"""The site's ASGI handler: Django's middleware chain and sync views in one thread hop."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from asgiref import sync

from agentsite.asgi_handler import SyncChainASGIHandler, _RequestThreads


def _serve(path: str) -> tuple[httpx.Response, int]:
    hops = 0
    original = sync.SyncToAsync.__call__

    async def counted(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        nonlocal hops
        hops += 1
        return await original(self, *args, **kwargs)

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=SyncChainASGIHandler())
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            return await c.get(path)

    sync.SyncToAsync.__call__ = counted
    try:
        # A thread of its own: the browser tests' sync Playwright leaves a loop running here.
        with ThreadPoolExecutor(max_workers=1) as thread:
            return thread.submit(asyncio.run, get()).result(), hops
    finally:
        sync.SyncToAsync.__call__ = original


def test_api_request_runs_the_whole_chain_in_one_hop():
    response, hops = _serve("/api/runs/")
    # The middlewares and the view ran: DRF's 401 with the security headers.
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "Content-Security-Policy" in response.headers
    # One hop for the chain, plus Django's request_started, response.close and the log
    # line of an error status; the async-mode chain took 16.
    assert hops <= 4, hops


def test_page_gets_its_csrf_cookie_and_headers_through_the_sync_chain():
    response, hops = _serve("/accounts/login/")
    assert response.status_code == 200
    assert "csrftoken" in response.cookies
    assert 'name="csrfmiddlewaretoken"' in response.text
    assert response.headers["X-Frame-Options"] == "DENY"
    assert hops <= 3, hops


def test_requests_reuse_a_pooled_thread_for_their_thread_sensitive_calls():
    from django.core.signals import request_finished, request_started

    seen: list[tuple[str, threading.Thread]] = []  # the objects: an ident can be reused

    def started(**kwargs):  # noqa: ANN003, ANN202
        seen.append(("started", threading.current_thread()))

    def finished(**kwargs):  # noqa: ANN003, ANN202
        seen.append(("finished", threading.current_thread()))

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        first, _ = _serve("/api/runs/")
        # Django's request_finished closes (gives back) the request thread's database
        # connection: it must run in the thread the view ran in, as with Django's handler.
        second, _ = _serve("/api/runs/")
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert first.status_code == second.status_code == 401
    assert [kind for kind, _ in seen] == ["started", "finished"] * 2
    # One pooled thread served both, start to end (Django's handler: a new one each).
    assert all(thread is seen[0][1] for _, thread in seen), seen
    assert seen[0][1].name.startswith("request")


def test_a_request_thread_is_idle_again_only_when_its_work_is_done():
    pool = _RequestThreads(idle_max=1)
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
    pool = _RequestThreads(idle_max=1)
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

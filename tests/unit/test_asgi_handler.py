"""The site's ASGI handler: Django's middleware chain and sync views in one thread hop."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx
from asgiref import sync

from agentsite.asgi_handler import SyncChainASGIHandler


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

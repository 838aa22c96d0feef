"""Request limits at each door: REST, the SSE streams and AG-UI answer 429 with
Retry-After in their error shape, per token and per address; made-up tokens are limited
per address; the right client gets in again after the window.

In process with small limits (``override_settings``: the limits are read per request),
each test from an address of its own, so the suite's generous limits and other tests'
counts play no part. Transactional: AG-UI reads the database from another thread.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.test import Client, override_settings

from tests.accounts import make_token, make_user

pytestmark = pytest.mark.django_db(transaction=True)
WINDOW = 2  # seconds


def off_loop(call: Callable[[], Any]) -> Any:
    """``call()`` in a thread of its own: an async view (AG-UI) run by Django's test client
    needs a thread with no running event loop (Playwright keeps one in the main thread
    once a browser test ran)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


def fresh_window() -> None:
    """Start at the beginning of a window, so a burst is counted in one."""
    time.sleep(WINDOW - time.time() % WINDOW + 0.02)


def new_address() -> str:
    n = uuid.uuid4().int
    return f"10.{n % 250}.{n // 250 % 250}.{n // 62500 % 250 + 1}"


@pytest.fixture
def address() -> str:
    return new_address()


@pytest.fixture
def owner():
    return make_user("owner", "owner@example.com", "pw")


def _client(address: str, token: str | None = None) -> Client:
    extra = {"HTTP_AUTHORIZATION": f"Token {token}"} if token else {}
    return Client(REMOTE_ADDR=address, **extra)


def _throttled(response, door: str) -> int:
    assert response.status_code == 429, (door, response.status_code, response.content[:300])
    assert response.json()["code"] == "throttled", response.content
    seconds = int(response["Retry-After"])
    assert 1 <= seconds <= WINDOW, seconds
    return seconds


DOORS = {
    # REST, an SSE stream open (of no run: the limit comes before the lookup), AG-UI.
    "rest": lambda c: c.get("/api/agents/"),
    "sse": lambda c: c.get(f"/api/runs/{uuid.uuid4()}/events/"),
    "agui": lambda c: off_loop(lambda: c.post("/agui/dev/connect/", {"threadId": "nope"},
                                              content_type="application/json")),
}
OK = {"rest": 200, "sse": 404, "agui": 404}


@pytest.mark.parametrize("door", DOORS)
@override_settings(THROTTLE_TOKEN_RATE=f"3/{WINDOW}s", THROTTLE_ADDRESS_RATE=f"100/{WINDOW}s")
def test_per_token_limit_at_each_door(owner, address, door):
    token, other = make_token(owner, "read"), make_token(owner, "read")
    client, send = _client(address, token), DOORS[door]
    fresh_window()
    assert [send(client).status_code for _ in range(3)] == [OK[door]] * 3
    seconds = _throttled(send(client), door)
    assert send(_client(address, other)).status_code == OK[door]  # another token: its own
    time.sleep(seconds)
    assert send(client).status_code == OK[door]  # after the window


@pytest.mark.parametrize("door", DOORS)
@override_settings(THROTTLE_TOKEN_RATE=f"100/{WINDOW}s", THROTTLE_ADDRESS_RATE=f"3/{WINDOW}s")
def test_per_address_limit_at_each_door(owner, address, door):
    tokens = [make_token(owner, "read") for _ in range(4)]
    send = DOORS[door]
    fresh_window()
    assert [send(_client(address, t)).status_code for t in tokens[:3]] == [OK[door]] * 3
    _throttled(send(_client(address, tokens[3])), door)  # a new token, the same address
    assert send(_client(new_address(), tokens[3])).status_code == OK[door]  # elsewhere: fine


@override_settings(THROTTLE_AUTH_FAILURE_RATE=f"5/{WINDOW}s")
def test_made_up_tokens_are_limited_per_address(owner, address):
    good = make_token(owner, "read")
    fresh_window()
    statuses = [DOORS["rest"](_client(address, f"ags_guess{i}")).status_code for i in range(8)]
    assert statuses == [401] * 5 + [429] * 3
    _throttled(DOORS["rest"](_client(address, "ags_guess")), "rest")
    agui = DOORS["agui"](_client(address, "ags_guess"))
    _throttled(agui, "agui")
    # The right token still gets in from there; made-up ones after the window.
    assert DOORS["rest"](_client(address, good)).status_code == 200
    time.sleep(int(agui["Retry-After"]))
    assert DOORS["rest"](_client(address, "ags_guess")).status_code == 401


@override_settings(THROTTLE_TOKEN_RATE=f"2/{WINDOW}s", THROTTLE_ADDRESS_RATE=f"100/{WINDOW}s")
def test_a_browser_session_is_limited_per_user(owner, address):
    browser = Client(REMOTE_ADDR=address)
    browser.force_login(owner)
    fresh_window()
    assert [browser.get("/api/agents/").status_code for _ in range(2)] == [200, 200]
    _throttled(browser.get("/api/agents/"), "rest")

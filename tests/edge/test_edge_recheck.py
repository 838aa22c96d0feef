"""How soon Pushpin asks a held stream again (the hold's ``Grip-Link`` timeout), read from
a web process's answer to a request signed as Pushpin signs it: as often as a direct
stream checks. A queue stream: its user's access every STREAM_RECHECK_SECONDS (30 s, as
direct streams; it was 120 s), and it is on the ``queue-reset`` channel (streams.edge).
A run stream: its watchdog's first look STREAM_WATCH_SECONDS after it opens (2 s in
tests/edge), not at the periodic check."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

from tests.edge.conftest import WATCH_SECONDS
from tests.retry_rows import retrying_run

pytestmark = pytest.mark.django_db(transaction=True)


def _held_answer(edge, path: str, token: str) -> httpx.Response:
    key = parse_qs(urlsplit(edge["env"]["GRIP_URL"]).query)["key"][0]
    sig = jwt.encode({"iss": "pushpin", "exp": int(time.time()) + 60}, key, "HS256")
    return httpx.get(f"http://127.0.0.1:{edge['web_ports'][1]}{path}", timeout=30, headers={
        "Authorization": f"Token {token}", "Grip-Sig": sig, "Accept": "text/event-stream"})


def _timeout(response: httpx.Response) -> int:
    link = response.headers["Grip-Link"]
    assert 'rel=next' in link, link
    return int(re.search(r"timeout=(\d+)", link).group(1))


def test_held_streams_are_asked_again_as_often_as_direct_ones_check(edge, users):
    queue = _held_answer(edge, "/api/events/", users["owner_token"])
    assert queue.status_code == 200, queue.text
    assert queue.headers["Grip-Hold"] == "stream"
    assert _timeout(queue) == 30
    assert "queue-reset" in queue.headers["Grip-Channel"], queue.headers["Grip-Channel"]

    run = retrying_run(users["owner"], in_seconds=600)
    held = _held_answer(edge, f"/api/runs/{run.id}/events/", users["owner_token"])
    assert held.status_code == 200, held.text
    assert _timeout(held) == int(WATCH_SECONDS)
    assert "queue-reset" not in held.headers["Grip-Channel"]

"""``agentsite_open_streams`` counts a stream while it is open, on the surface that holds
it, and drops it once the client goes away (its socket closed: the server cancels the
stream, whose counting wrapper ends with it)."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlparse

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def open_streams(reader: httpx.Client) -> dict[str, float]:
    text = reader.get("/metrics").text
    return {s.labels["surface"]: s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == "agentsite_open_streams"}


def until(check, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_run_stream_is_counted_while_open(api, live, users):
    client, reader = api("owner"), api("reviewer")
    run = wait_run(client, start_run(client, input={"topic": "streams"})["id"], "paused")
    before = open_streams(reader).get("run", 0)
    address = urlparse(live["base_url"])
    # A socket of our own: closing it is the client going away (an HTTP client's pool
    # may keep the connection).
    with socket.create_connection((address.hostname, address.port), timeout=30) as raw:
        raw.sendall(f"GET /api/runs/{run['id']}/events/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    f"Authorization: Token {users['owner_token']}\r\n"
                    "Accept: text/event-stream\r\n\r\n".encode())
        assert raw.recv(100).startswith(b"HTTP/1.1 200")
        until(lambda: open_streams(reader).get("run", 0) == before + 1)
        raw.shutdown(socket.SHUT_RDWR)
    until(lambda: open_streams(reader).get("run", 0) == before)

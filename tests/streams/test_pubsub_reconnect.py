"""The one pub/sub reader of a web process reconnects after Redis drops it, and both kinds
of stream (SSE and AG-UI) keep delivering every event in order; the queue stream, whose
changes are not replayed by id, first says a reset (its pages re-read)."""

from __future__ import annotations

import time

import pytest
import redis
from django.conf import settings

from streams.pubsub import client_name
from tests.agui_client import interrupts, resume, run_input, run_segment
from tests.helpers import published_events
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)


def subscriptions(r: redis.Redis, pid: int) -> list[dict]:
    """The web process's pub/sub connections (other suites may share this Redis)."""
    return [c for c in r.client_list(_type="pubsub") if c.get("name") == client_name(pid)
            and int(c.get("sub", 0)) > 0]


def wait_subscribed(r: redis.Redis, pid: int, timeout: float = 10) -> list[dict]:
    deadline = time.monotonic() + timeout
    while not (found := subscriptions(r, pid)):
        assert time.monotonic() < deadline, "the web process did not (re)subscribe"
        time.sleep(0.05)
    return found


def test_streams_survive_a_dropped_pubsub_connection(api, live):
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    web = live["web"].proc.pid
    client = api("owner")
    body = run_input(forwardedProps={"input": {"topic": "reconnect"}})
    first = run_segment(client, "dev", body)  # the web process subscribes for this stream
    # One reader per web process, shared by every stream (not one per stream).
    (before,) = wait_subscribed(r, web)
    (pending,) = interrupts(first)
    run_id = None
    with SseStream(client, "/api/events/") as queue:
        r.client_kill_filter(_id=before["id"])
        (after,) = wait_subscribed(r, web)
        assert after["id"] != before["id"]  # a new connection: it reconnected
        second = run_segment(client, "dev", resume(body["threadId"], pending["id"],
                                                   {"value": "Apollo"}))
        # Queue changes published while it was away are lost: the page is told to re-read.
        assert queue.next().event == "stream-reset"
        change = queue.next().json()
        assert change["type"] == "interrupts_changed"
        run_id = change["run_id"]
    assert len(subscriptions(r, web)) == 1
    assert second[-1]["outcome"]["type"] == "interrupt"
    # The AG-UI stream got the whole second segment, exactly as stored.
    stored = published_events(run_id)
    start = max(i for i, e in enumerate(stored) if e["type"] == "RUN_STARTED")
    assert [e["type"] for e in second] == [e["type"] for e in stored[start:]]

"""A stream sends each event once and in id order, whatever pub/sub does.

Pub/sub may repeat what a stream already read from the store, and two publishers of one
channel may publish ids out of order; here both happen on purpose (on the real Redis).
"""

from __future__ import annotations

import json

import pytest
import redis
from django.conf import settings

from streams.keys import EVENT_TTL_SECONDS, PUBSUB_CHANNEL, counter_key, event_key
from tests.helpers import published_events, start_run, wait_run
from tests.sse_client import SseStream

# The CUSTOM events written here by hand come after the run's RUN_FINISHED.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agui_unchecked]


def custom(i: int) -> str:
    return json.dumps({"type": "CUSTOM", "name": "order-test", "value": i})


def test_repeats_are_dropped_and_gaps_filled_from_the_store(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    channel = f"run-{run['id']}"
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)

    def store(event_id: int, data: str) -> None:
        r.set(event_key(channel, event_id), json.dumps({"type": "message", "data": data}),
              ex=EVENT_TTL_SECONDS)

    def announce(event_id: int, data: str) -> None:
        r.publish(PUBSUB_CHANNEL, json.dumps({"channel": channel, "event_type": "message",
                                                "data": data, "pub_id": str(event_id)}))

    with SseStream(client, f"/api/runs/{run['id']}/events/") as stream:
        stored = len(published_events(run["id"]))
        got = [stream.next() for _ in range(stored)]
        a = r.incr(counter_key(channel))  # publisher A takes an id...
        b = r.incr(counter_key(channel))  # ...publisher B the next one
        store(a, custom(a))
        store(b, custom(b))
        announce(b, custom(b))  # B is announced first
        announce(b, custom(b))  # and twice
        announce(a, custom(a))  # A comes late
        c = r.incr(counter_key(channel))
        store(c, custom(c))
        announce(c, custom(c))
        got += [stream.next() for _ in range(3)]

    assert [e.number for e in got] == list(range(1, c + 1))
    assert [e.json()["value"] for e in got[-3:]] == [a, b, c]

"""The event store is django-eventstream's storage too (EVENTSTREAM_STORAGE_CLASS): the
library's public ``send_event`` stores in our layout, with our ids, and reaches our
streams; ``get_events`` / ``get_current_id`` read what our publisher wrote."""

from __future__ import annotations

import json
import uuid

import pytest
from django_eventstream import send_event

from agui.events import step_started
from streams.keys import run_channel
from streams.publish import publish, wait_published
from streams.storage import EventStore
from tests.helpers import published_events, start_run, wait_run
from tests.sse_client import SseStream


def test_publisher_and_storage_interface_share_ids():
    run_id = str(uuid.uuid4())
    channel = run_channel(run_id)
    publish(run_id, [step_started("a"), step_started("b")])
    wait_published()
    store = EventStore()
    assert store.get_current_id(channel) == 2
    event = store.append_event(channel, "message", json.dumps({"type": "CUSTOM", "n": 3}))
    assert event.id == 3
    got = store.get_events(channel, 1)
    assert [e.id for e in got] == [2, 3]
    assert json.loads(got[0].data)["stepName"] == "b"
    assert store.get_events(channel, 3) == []
    assert [e.get("stepName", e["type"]) for e in published_events(run_id)] == [
        "a", "b", "CUSTOM"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.agui_unchecked  # the CUSTOM event comes after the run's RUN_FINISHED
def test_send_event_reaches_an_open_stream(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    stored = len(published_events(run["id"]))
    with SseStream(client, f"/api/runs/{run['id']}/events/") as stream:
        got = [stream.next() for _ in range(stored)]
        send_event(run_channel(run["id"]), "message", {"type": "CUSTOM", "name": "x"})
        last = stream.next()
    assert last.number == got[-1].number + 1 == stored + 1
    assert last.json() == {"type": "CUSTOM", "name": "x"}

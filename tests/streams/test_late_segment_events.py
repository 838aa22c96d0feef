"""A segment's events after its AG-UI run ended are dropped by the event store, in the same
atomic script that stores them (``streams.storage.SEND_LUA``): a late publish of a segment
whose run was ended by someone else (the failure's ``end``), or after its own end, would
be an event outside a run, which the official AG-UI client rejects. Two publishers on the
real Redis, as the worker and the services publish."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import redis
from django.conf import settings

from agui.events import (
    run_error,
    run_finished_success,
    run_started,
    step_finished,
    step_started,
    text_content,
    text_start,
)
from streams.keys import counter_key, event_key, run_channel
from streams.publish import wire
from streams.storage import Fence, send_args
from tests.agui_rules import validate_events

IDS = {"thread_id": "t", "run_id": "r"}


@pytest.fixture
def client() -> redis.Redis:
    return redis.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION)


@pytest.fixture
def channel() -> str:
    return run_channel(uuid.uuid4())


def send(client: redis.Redis, channel: str, events: list[Any], fence: Fence | None = None,
         ) -> int:
    """Publish as ``streams.publish`` does; the last id stored (-1: refused)."""
    (last,) = client.execute_command(*send_args(
        {channel: [wire(e) for e in events]}, fences={channel: fence} if fence else None))
    return last


def stored(client: redis.Redis, channel: str) -> list[dict[str, Any]]:
    count = int(client.get(counter_key(channel)) or 0)
    return [json.loads(json.loads(client.get(event_key(channel, i)))["data"])
            for i in range(1, count + 1)]


def test_a_failed_segments_late_events_are_dropped(client, channel):
    send(client, channel, [], ("claim", "lease-a"))
    send(client, channel, [run_started(**IDS), step_started("ask"), text_start("m1")],
         ("check", "lease-a"))
    # Another process fails the run while segment A still streams (run_fail: ``end``).
    send(client, channel, [run_started(**IDS), run_error(message="failed", code="x")],
         ("end", ""))
    # A's next events, and even a new AG-UI run of its lease, come too late.
    assert send(client, channel, [text_content("m1", "late"), step_finished("ask")],
                ("check", "lease-a")) == -1
    assert send(client, channel, [run_started(**IDS)], ("check", "lease-a")) == -1
    events = stored(client, channel)
    assert events[-1]["type"] == "RUN_ERROR"
    validate_events(events)

    # A retry's claim owns the channel again: its new AG-UI run is stored.
    send(client, channel, [], ("claim", "lease-b"))
    assert send(client, channel, [run_started(**IDS), step_started("ask")],
                ("check", "lease-b")) > 0
    assert stored(client, channel)[-2]["type"] == "RUN_STARTED"


def test_nothing_of_a_segment_follows_its_own_end(client, channel):
    send(client, channel, [], ("claim", "lease-a"))
    send(client, channel, [run_started(**IDS), step_started("ask")], ("check", "lease-a"))
    # The segment's end, published by the service under the run's lock (no fence op).
    send(client, channel, [step_finished("ask"), run_finished_success(**IDS, result={})])
    assert send(client, channel, [step_finished("ask")], ("check", "lease-a")) == -1
    (run,) = validate_events(stored(client, channel))
    assert run[-1]["type"] == "RUN_FINISHED"

    # The run's next segment starts a new AG-UI run on the same channel.
    send(client, channel, [], ("claim", "lease-b"))
    assert send(client, channel, [run_started(**IDS), step_started("next")],
                ("check", "lease-b")) > 0
    assert send(client, channel, [step_finished("next"), run_finished_success(
        **IDS, result={})], ("check", "lease-b")) > 0
    assert len(validate_events(stored(client, channel))) == 2

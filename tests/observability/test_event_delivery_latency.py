"""``agentsite_event_delivery_seconds`` (publish → delivery) is observed once for each
event a stream hands to its client: a REST SSE stream of a scripted run, opened on a
paused run (its events read back from the store) and kept open through an answer (the
next segment's events live), moves the histogram's count by exactly the number of
events the client received; an AG-UI segment by the number of events it relayed. The
publish time rides in the store and the fan-out, not in what the client gets."""

from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from runs.models import AgentRun
from tests.agui_client import run_input, run_segment
from tests.helpers import answer, pending, published_events, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

DELIVERED = "agentsite_event_delivery_seconds_count"


def delivered(reader) -> dict[str, float]:
    """The run surface's delivery counts by path (stored, live)."""
    text = reader.get("/metrics").text
    return {s.labels["path"]: s.value for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == DELIVERED and s.labels["surface"] == "run"}


def test_every_event_a_run_stream_delivers_is_timed_once(api):
    client, other, reader = api("owner"), api("owner"), api("reviewer")
    run = wait_run(client, start_run(client, input={"topic": "latency"})["id"], "paused")
    before = delivered(reader)
    received, finished = [], 0
    with client.stream("GET", f"/api/runs/{run['id']}/events/",
                       headers={"Accept": "text/event-stream"}, timeout=30) as stream:
        kind = None
        for line in stream.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: ") and kind == "message":
                event = json.loads(line.removeprefix("data: "))
                assert "at" not in event  # the publish time stays on our side
                received.append(event["type"])
                if event["type"] == "RUN_FINISHED":
                    finished += 1
                    if finished == 1:  # the stored segment: answer, the next one is live
                        assert answer(other, run, {"value": "Apollo"}).status_code == 202
                    else:
                        break
    assert received.count("RUN_STARTED") == 2, received
    after = delivered(reader)
    moved = {path: after.get(path, 0) - before.get(path, 0) for path in after}
    assert sum(moved.values()) == len(received), (moved, received)
    assert moved.get("stored", 0) > 0 and moved.get("live", 0) > 0, moved
    assert pending(wait_run(client, run["id"], "paused"))["kind"] == "select"


def agui_delivered(reader) -> float:
    text = reader.get("/metrics").text
    return sum(s.value for family in text_string_to_metric_families(text)
               for s in family.samples
               if s.name == DELIVERED and s.labels["surface"] == "agui")


def test_an_agui_segment_times_each_event_it_relays(api):
    """The AG-UI stream of a new run relays the worker's events (the view adds its own
    around them, which have no publish time): each relayed one is timed once."""
    client, reader = api("owner"), api("reviewer")
    before = agui_delivered(reader)
    body = run_input(forwardedProps={"input": {"topic": "latency"}})
    segment = run_segment(client, "dev", body)
    assert segment[-1]["outcome"]["type"] == "interrupt"
    run = AgentRun.objects.get(thread_id=body["threadId"])
    published = published_events(str(run.id))
    assert published[-1]["type"] == "RUN_FINISHED"
    assert agui_delivered(reader) - before == len(published)

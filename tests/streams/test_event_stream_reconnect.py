"""Reconnect with Last-Event-ID in the middle of a run: every event arrives, in order, once."""

from __future__ import annotations

import pytest

from tests.helpers import answer_and_wait, published_events, start_run, wait_run
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]


def read_until_finished(stream: SseStream, got: list, finishes: int) -> None:
    """Read events into ``got`` until it holds ``finishes`` RUN_FINISHED events."""
    while sum(1 for e in got if e.json()["type"] == "RUN_FINISHED") < finishes:
        got.append(stream.next())


def test_reconnect_with_last_event_id_misses_nothing(api):
    client = api("owner")
    run = start_run(client, input={"topic": "the rocket"})
    url = f"/api/runs/{run['id']}/events/"
    got = []
    # Open while the run starts; read a few events and drop the connection.
    with SseStream(client, url) as stream:
        for _ in range(3):
            got.append(stream.next())
    run = wait_run(client, run["id"], "paused")
    # Two segments happen while nobody listens.
    run = answer_and_wait(client, run, ANSWERS[0])
    run = answer_and_wait(client, run, ANSWERS[1])
    # Reconnect with the header (what EventSource sends) and catch up, then stay live.
    with SseStream(client, url, headers={"Last-Event-ID": got[-1].id}) as stream:
        read_until_finished(stream, got, 3)
        run = answer_and_wait(client, run, ANSWERS[2])
        read_until_finished(stream, got, 4)
        cut = got[-1].id
    # Once more with the query parameter (what a client sets when it reopens by itself).
    with SseStream(client, url, params={"lastEventId": cut}) as stream:
        run = answer_and_wait(client, run, ANSWERS[3])
        assert run["status"] == "completed"
        read_until_finished(stream, got, 5)

    stored = published_events(run["id"])
    assert [e.number for e in got] == list(range(1, len(stored) + 1))
    assert [e.json() for e in got] == stored
    assert {e.id.rsplit(":", 1)[0] for e in got} == {f"run-{run['id']}"}


def test_a_late_stream_starts_from_the_first_event(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    stored = published_events(run["id"])
    with SseStream(client, f"/api/runs/{run['id']}/events/") as stream:
        got = [stream.next() for _ in stored]
    assert [e.json() for e in got] == stored
    assert got[0].json()["type"] == "RUN_STARTED" and got[-1].json()["type"] == "RUN_FINISHED"

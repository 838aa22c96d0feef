"""Streams through Pushpin: every access rule is Django's, the proxy holds what it allows.

Owner and reviewer get the run's events (stored, then live, published by the edge
forwarder); an outsider gets the JSON 404 and an anonymous client the 401, both before
any streaming, as without the proxy; the queue stream carries each user's own channel
(everyone's for a reviewer); a client cannot hand in the proxy's own parameters.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.helpers import answer_and_wait, published_events, start_run, wait_run
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)

SSE = {"Accept": "text/event-stream"}


def next_about(stream: SseStream, run_id: str):
    while True:  # suites side by side share Redis and user ids
        event = stream.next()
        if event.json().get("run_id") == run_id:
            return event


def test_each_role_through_the_proxy(via_edge, edge, users):
    owner, reviewer, outsider = via_edge("owner"), via_edge("reviewer"), via_edge("outsider")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    url = f"/api/runs/{run['id']}/events/"
    stored = published_events(run["id"])
    for client in (owner, reviewer):
        with SseStream(client, url, headers=SSE) as stream:
            assert stream.status == 200
            assert stream.response.headers["content-type"].startswith("text/event-stream")
            # Pushpin took the GRIP headers; the client sees none.
            assert not any(h.lower().startswith("grip-") for h in stream.response.headers)
            assert stream.next(skip_control=False).event == "stream-open"
            got = [stream.next() for _ in stored]
            assert [e.id for e in got] == [f"run-{run['id']}:{n}"
                                           for n in range(1, len(stored) + 1)]
            assert [e.json() for e in got] == stored
    for bad in (url, f"/api/runs/{uuid.uuid4()}/events/"):
        with SseStream(outsider, bad, headers=SSE) as stream:
            assert stream.status == 404
            assert stream.json()["code"] == "not_found"
    with httpx.Client(base_url=edge["base_url"], headers=SSE, timeout=10) as anonymous:
        for path in (url, "/api/events/"):
            with SseStream(anonymous, path) as stream:
                assert stream.status == 401
                assert "WWW-Authenticate" in stream.response.headers
    # The proxy's own parameters from a client: refused, as without the proxy.
    for params in ({"es-meta": "x"}, {"recover": "true"}):
        assert owner.get(url, params=params, headers=SSE).status_code == 400
    forged = owner.get(url, params={"link": "next", "es-meta": "x.y.z"}, headers=SSE,
                       timeout=10)
    assert "stream-error" in forged.text and "RUN_STARTED" not in forged.text


def test_live_events_and_queue_channels_through_the_proxy(via_edge, edge, users):
    owner, reviewer = via_edge("owner"), via_edge("reviewer")
    quiet = httpx.Client(base_url=edge["base_url"], timeout=httpx.Timeout(10, read=2),
                         headers={"Authorization": f"Token {users['outsider_token']}"})
    with SseStream(owner, "/api/events/") as mine, \
            SseStream(reviewer, "/api/events/") as everyone, \
            SseStream(quiet, "/api/events/") as others:
        for stream in (mine, everyone, others):
            assert stream.next(skip_control=False).event == "stream-open"
        run = wait_run(owner, start_run(owner)["id"], "paused")
        with SseStream(owner, f"/api/runs/{run['id']}/events/") as events:
            before = len(published_events(run["id"]))
            for _ in range(before):
                events.next()
            change = {"type": "interrupts_changed", "run_id": run["id"]}
            assert next_about(mine, run["id"]).json() == change
            assert next_about(everyone, run["id"]).json() == {**change,
                                                              "owner_id": users["owner"].pk}
            answer_and_wait(owner, run, {"value": "Apollo"})
            # The worker's events of the resumed segment, live through the proxy.
            after = published_events(run["id"])
            live = [events.next() for _ in range(len(after) - before)]
            assert [e.number for e in live] == list(range(before + 1, len(after) + 1))
            assert [e.json() for e in live] == after[before:]
        with pytest.raises(httpx.ReadTimeout):
            next_about(others, run["id"])
    quiet.close()

"""Two web processes and two workers on one database and one Redis: a run started on
one web process is streamed from the other and answered on the first; its events cross
processes in order, each once, and make a valid AG-UI sequence."""

from __future__ import annotations

import threading

import pytest

from tests.agui_rules import validate_events
from tests.faults.cluster import client, cluster_fixture
from tests.helpers import pending, published_events, wait_run
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)
cluster = pytest.fixture(name="cluster")(cluster_fixture)


def test_start_on_one_web_stream_from_the_other_answer_on_the_first(cluster, users):
    c = cluster()
    c.worker("worker-a")
    c.worker("worker-b")
    _a, url_a = c.web("web-a")
    _b, url_b = c.web("web-b")
    web_a, web_b = client(url_a, users["owner_token"]), client(url_b, users["owner_token"])

    run = web_a.post("/api/runs/", json={"agent": "dev"}).json()
    got: list = []
    done = threading.Event()

    def read() -> None:
        # Streamed from web B from the first event on, until the run's last RUN_FINISHED.
        with SseStream(web_b, f"/api/runs/{run['id']}/events/") as stream:
            while not done.is_set():
                event = stream.next()
                got.append(event)
                body = event.json()
                outcome = body.get("outcome") or {}
                if body["type"] == "RUN_FINISHED" and outcome.get("type") != "interrupt":
                    return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    answers = [{"value": "Apollo"}, {"value": "blue"}, {"values": ["logging"]},
               {"approved": True}]
    state = wait_run(web_a, run["id"], "paused")
    for payload in answers:
        r = web_a.post(f"/api/runs/{run['id']}/resume/", json={
            "interrupt_id": pending(state)["interrupt_id"], "payload": payload})
        assert r.status_code == 202, r.text
        state = wait_run(web_a, run["id"], {"paused", "completed"})
    assert state["status"] == "completed", state
    reader.join(30)
    done.set()
    assert not reader.is_alive()

    stored = published_events(run["id"])
    # Every event, once, in id order, as stored; five AG-UI runs (four pauses, one end).
    assert [e.number for e in got] == list(range(1, len(stored) + 1))
    assert [e.json() for e in got] == stored
    assert len(validate_events(stored)) == 5

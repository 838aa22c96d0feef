"""Lists: own rows only, pagination, filters, and bad filter values."""

from __future__ import annotations

import pytest

from tests.helpers import start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_runs_pagination_and_filters(api):
    client = api("owner")
    ids = [start_run(client)["id"] for _ in range(3)] + [start_run(client, agent="showcase")["id"]]
    for run_id in ids:
        wait_run(client, run_id, "paused")
    client.post(f"/api/runs/{ids[0]}/cancel/")

    page1 = client.get("/api/runs/", params={"page_size": 3}).json()
    assert page1["count"] == 4 and len(page1["results"]) == 3 and page1["next"]
    page2 = client.get("/api/runs/", params={"page_size": 3, "page": 2}).json()
    assert len(page2["results"]) == 1 and page2["next"] is None
    seen = [r["id"] for r in page1["results"] + page2["results"]]
    assert sorted(seen) == sorted(ids)

    paused = client.get("/api/runs/", params={"status": "paused"}).json()
    assert paused["count"] == 3
    showcase = client.get("/api/runs/", params={"agent": "showcase"}).json()
    assert [r["id"] for r in showcase["results"]] == [ids[3]]
    both = client.get("/api/runs/", params={"agent": "dev", "status": "cancelled"}).json()
    assert [r["id"] for r in both["results"]] == [ids[0]]

    bad = client.get("/api/runs/", params={"status": "sleeping"})
    assert bad.status_code == 400 and "sleeping" in bad.json()["fields"]["status"][0]
    assert client.get("/api/runs/", params={"page": 99}).status_code == 404

    # Nobody else sees any of it, not even as a count.
    assert api("outsider").get("/api/runs/").json()["count"] == 0
    assert api("outsider").get("/api/conversations/").json()["count"] == 0


def test_interrupt_queue_filters(api):
    owner, reviewer = api("owner"), api("reviewer")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    mine = owner.get("/api/interrupts/", params={"status": "pending"}).json()
    assert [i["run_id"] for i in mine["results"]] == [run["id"]]
    assert owner.get("/api/interrupts/", params={"status": "applied"}).json()["count"] == 0
    assert reviewer.get("/api/interrupts/", params={"status": "pending"}).json()["count"] == 1
    assert owner.get("/api/interrupts/", params={"status": "nope"}).status_code == 400


def test_a_start_answers_with_the_run_as_it_committed_it(api):
    client = api("owner")
    created = start_run(client, message="hello")
    assert created["status"] in ("queued", "running")  # not read back after the commit
    assert created["pending_interrupts"] == []
    assert created["segments"] == (1 if created["status"] == "running" else 0)
    stored = wait_run(client, created["id"], "paused")
    unchanged = ["id", "agent", "agent_version", "thread_id", "conversation_id", "owner",
                 "input", "result", "error", "assistant_message_id", "created_at",
                 "finished_at"]
    assert {k: created[k] for k in unchanged} == {k: stored[k] for k in unchanged}
    assert set(created) == set(stored)
    assert created["owner"] == "owner" and created["assistant_message_id"]

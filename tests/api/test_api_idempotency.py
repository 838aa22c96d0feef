"""Idempotency-Key: the same key and body replay the first response; another body is 422."""

from __future__ import annotations

import uuid

import pytest

from runs.models import AgentRun, AuditLog
from tests.helpers import pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def key(name: str) -> dict[str, str]:
    # Unique per test run: a reused database name and user id must not meet an old key.
    return {"Idempotency-Key": f"{name}-{RUN}"}


RUN = uuid.uuid4().hex


def test_start_replays_first_response(api):
    client = api("owner")
    body = {"agent": "dev", "input": {"topic": "idem"}}
    first = client.post("/api/runs/", json=body, headers=key("k-1"))
    again = client.post("/api/runs/", json=body, headers=key("k-1"))
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert AgentRun.objects.count() == 1

    other = client.post("/api/runs/", json={**body, "input": {"topic": "other"}},
                        headers=key("k-1"))
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    assert AgentRun.objects.count() == 1
    wait_run(client, first.json()["id"], "paused")


def test_keys_are_per_user(api):
    body = {"agent": "dev"}
    mine = api("owner").post("/api/runs/", json=body, headers=key("shared"))
    theirs = api("outsider").post("/api/runs/", json=body, headers=key("shared"))
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]
    assert theirs.json()["owner"] == "outsider"
    for client, run in ((api("owner"), mine), (api("outsider"), theirs)):
        wait_run(client, run.json()["id"], "paused")


def test_resume_and_decision_replay(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    body = {"interrupt_id": pending(run)["interrupt_id"], "payload": {"value": "Idem"}}
    url = f"/api/runs/{run['id']}/resume/"
    first = client.post(url, json=body, headers=key("r-1"))
    again = client.post(url, json=body, headers=key("r-1"))
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json()
    # Without the key the same answer is a plain second submission: refused.
    plain = client.post(url, json=body)
    assert plain.status_code == 409 and plain.json()["code"] == "already_decided"
    assert AuditLog.objects.filter(run_id=run["id"], action="decision").count() == 1

    run = wait_run(client, run["id"], "paused")
    item = pending(run)
    url = f"/api/interrupts/{item['id']}/decision/"
    first = client.post(url, json={"payload": {"value": "red"}}, headers=key("d"))
    again = client.post(url, json={"payload": {"value": "red"}}, headers=key("d"))
    assert first.status_code == again.status_code == 202 and first.json() == again.json()
    changed = client.post(url, json={"payload": {"value": "blue"}},
                          headers=key("d"))
    assert changed.status_code == 422
    assert AuditLog.objects.filter(run_id=run["id"], action="decision").count() == 2
    wait_run(client, run["id"], "paused")


def test_errors_are_replayed_and_bad_keys_refused(api):
    client = api("owner")
    bad = {"agent": "dev", "input": {"topic": ""}}
    first = client.post("/api/runs/", json=bad, headers=key("e-1"))
    again = client.post("/api/runs/", json=bad, headers=key("e-1"))
    assert first.status_code == again.status_code == 400
    assert first.json() == again.json()
    r = client.post("/api/runs/", json={"agent": "dev"}, headers={"Idempotency-Key": "x" * 256})
    assert r.status_code == 400 and r.json()["code"] == "invalid_idempotency_key"
    assert AgentRun.objects.count() == 0

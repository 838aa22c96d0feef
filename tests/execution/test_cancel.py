"""Cancelling: a paused run, a cancelled answer, and what a cancelled run refuses."""

from __future__ import annotations

import pytest

from runs.models import AgentRun
from tests.agui_rules import validate_events
from tests.helpers import (
    answer,
    counter_expires_with_events,
    counter_ttl,
    pending,
    published_events,
    start_run,
    wait_run,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_cancel_paused_run(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    assert counter_ttl(run["id"]) == -1  # paused: its ids must go on when it resumes
    r = client.post(f"/api/runs/{run['id']}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert counter_expires_with_events(run["id"])
    db_run = AgentRun.objects.get(pk=run["id"])
    assert db_run.interrupts.get().status == "cancelled"
    assert db_run.finished_at is not None
    r = answer(client, run, {"value": "late"})
    assert r.status_code == 409 and r.json()["code"] == "not_pending"
    r = client.post(f"/api/runs/{run['id']}/cancel/")
    assert r.status_code == 409 and r.json()["code"] == "run_finished"
    runs = validate_events(published_events(run["id"]))
    assert runs[-1][-1]["outcome"]["type"] == "cancelled"
    # The thread is free again for a new run.
    again = client.post("/api/runs/", json={"agent": "dev", "thread_id": run["thread_id"]})
    assert again.status_code == 201, again.text


def test_cancelled_answer_to_an_approval_is_a_no(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    for payload in ({"value": "N"}, {"value": "red"}, {"values": ["alerts"]}):
        assert answer(client, run, payload).status_code == 202
        run = wait_run(client, run["id"], "paused")
    r = client.post(f"/api/runs/{run['id']}/resume/", json={"resume": [
        {"interrupt_id": pending(run)["interrupt_id"], "status": "cancelled"}]})
    assert r.status_code == 202, r.text
    run = wait_run(client, run["id"], "rejected")
    assert run["result"]["reason"] == "cancelled by user"


def test_cancelled_answer_to_a_question_cancels_the_run(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    r = client.post(f"/api/runs/{run['id']}/resume/", json={"resume": [
        {"interrupt_id": pending(run)["interrupt_id"], "status": "cancelled"}]})
    assert r.status_code == 202, r.text
    run = wait_run(client, run["id"], "cancelled")
    assert "cancelled by the user" in run["error"]
    runs = validate_events(published_events(run["id"]))
    assert runs[-1][-1]["outcome"]["type"] == "cancelled"

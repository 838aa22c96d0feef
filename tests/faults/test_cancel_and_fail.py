"""Ending a run closes everything about it: interrupts, the AG-UI run of every listener,
and a running graph (stopped between two steps, not at its next pause)."""

from __future__ import annotations

import time

import pytest
from django.db import transaction

from execution import lifecycle
from hitl import lifecycle as hitl_lifecycle
from hitl.models import AgentInterrupt
from runs.models import AgentRun
from runs.services import run_start
from tests.agui_rules import validate_events
from tests.faults.cluster import client, cluster_fixture, effects, wait_all
from tests.helpers import (
    answer,
    counter_expires_with_events,
    pending,
    published_events,
    start_run,
    wait_run,
)
from tests.worker_idle import wait_tasks_done

pytestmark = pytest.mark.django_db(transaction=True)
cluster = pytest.fixture(name="cluster")(cluster_fixture)


def _ended_cancelled(run_id: str) -> list[str]:
    runs = validate_events(published_events(run_id))
    assert runs and runs[-1][-1]["type"] == "RUN_FINISHED"
    assert runs[-1][-1]["outcome"]["type"] == "cancelled", runs[-1][-1]
    return [e["type"] for e in runs[-1]]


def test_cancel_queued_and_resuming_runs_sends_the_end(cluster, users):
    c = cluster()
    _web, url = c.web()  # no worker yet: runs stay queued
    api = client(url, users["owner_token"])
    queued = start_run(api)
    r = api.post(f"/api/runs/{queued['id']}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text
    assert _ended_cancelled(queued["id"]) == ["RUN_STARTED", "RUN_FINISHED"]

    worker = c.worker()
    run = wait_run(api, start_run(api)["id"], "paused")
    worker.stop()
    assert answer(api, run, {"value": "later"}).status_code == 202
    assert AgentRun.objects.get(pk=run["id"]).status == "resuming"
    r = api.post(f"/api/runs/{run['id']}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text
    # The answer will never be applied: it is closed with the run.
    row = AgentInterrupt.objects.get(run_id=run["id"])
    assert row.status == "cancelled" and row.decision == {"value": "later"}
    worker.start()  # its resume task finds the run cancelled and does nothing
    wait_tasks_done(c.queue)
    assert AgentRun.objects.get(pk=run["id"]).status == "cancelled"
    types = _ended_cancelled(run["id"])
    assert types == ["RUN_STARTED", "RUN_FINISHED"]


def test_cancel_running_run_stops_between_steps(cluster, users):
    c = cluster(SLOW_STEP_SECONDS="1")
    c.worker()
    _web, url = c.web()
    api = client(url, users["owner_token"])
    run = start_run(api, "slow_counted", input={})
    wait_all(lambda: AgentRun.objects.get(pk=run["id"]).status == "running", 30)
    r = api.post(f"/api/runs/{run['id']}/cancel/")
    assert r.status_code == 200, r.text
    at_cancel = len(effects(run["thread_id"]))
    # The step in flight finishes; no other starts; the question is never asked.
    wait_all(lambda: published_events(run["id"])
             and published_events(run["id"])[-1]["type"] == "RUN_FINISHED", 15)
    time.sleep(2.5)  # longer than two steps: a graph that went on would show it
    done = effects(run["thread_id"])
    assert len(done) <= at_cancel + 1 and done == ["work1", "work2"][:len(done)], done
    assert not AgentInterrupt.objects.filter(run_id=run["id"]).exists()
    assert AgentRun.objects.get(pk=run["id"]).status == "cancelled"
    validate_events(published_events(run["id"]))
    # Its segment closed the AG-UI run after the cancel had set the counter to expire.
    assert counter_expires_with_events(run["id"])


def test_run_fail_closes_pending_and_decided_interrupts(users, unconsumed_queue):
    run = run_start(owner=users["owner"], agent="dev", input={"topic": "x"})
    with transaction.atomic():
        locked = AgentRun.objects.select_for_update().get(pk=run.pk)
        locked.status = AgentRun.Status.PAUSED
        locked.save(update_fields=["status"])
        hitl_lifecycle.interrupts_open(run=locked, requests=[
            ("a" * 32, {"type": "input", "message": "one"}),
            ("b" * 32, {"type": "input", "message": "two"})])
    AgentInterrupt.objects.filter(interrupt_id="a" * 32).update(
        status="decided", decision={"value": "x"}, decided_by=users["owner"])
    failed = lifecycle.run_fail(run_id=str(run.pk), error="boom")
    assert failed is not None and failed.status == "failed"
    assert sorted(AgentInterrupt.objects.filter(run=run).values_list("status", flat=True)) == [
        "cancelled", "cancelled"]


def test_reviewer_resumes_and_cancels_through_the_run_endpoints(api, users):
    owner, reviewer = api("owner"), api("reviewer")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    r = reviewer.post(f"/api/runs/{run['id']}/resume/",
                      json={"interrupt_id": pending(run)["interrupt_id"],
                            "payload": {"value": "R"}})
    assert r.status_code == 202, r.text
    assert r.json()["id"] == run["id"]
    run = wait_run(owner, run["id"], "paused")
    r = reviewer.post(f"/api/runs/{run['id']}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text
    assert AgentRun.objects.get(pk=run["id"]).status == "cancelled"

"""Segments the web process runs itself (execution/inline.py): claimed in the transaction
that resumes them, run after its commit, handed to a worker when the web process dies,
and left to the worker when the web process has no free slot."""

from __future__ import annotations

import signal
import time

import pytest
from django.db import transaction

from execution import inline
from hitl.models import AgentInterrupt
from hitl.services import Answer, interrupts_decide
from runs.models import AgentRun, AuditLog
from runs.services import run_start
from tests.faults.cluster import client, cluster_fixture, effects, wait_all

pytestmark = pytest.mark.django_db(transaction=True)
cluster = pytest.fixture(name="cluster")(cluster_fixture)

STATUSES = [("", "queued"), ("queued", "running"), ("running", "paused"),
            ("paused", "resuming"), ("resuming", "running"), ("running", "completed")]


def _statuses(run_id: str) -> list[tuple[str, str]]:
    return list(AuditLog.objects.filter(run_id=run_id, action="run.status")
                .order_by("id").values_list("from_status", "to_status"))


def _lease(run_id: str) -> str:
    return AgentRun.objects.get(pk=run_id).lease_owner


def test_web_killed_mid_segment_a_worker_takes_it_over_once(cluster, users):
    c = cluster(INLINE_SEGMENTS="2", SLOW_STEP_SECONDS="1")
    c.worker()
    web, url = c.web()
    r = client(url, users["owner_token"]).post(
        "/api/runs/", json={"agent": "slow_counted", "input": {}})
    assert r.status_code == 201, r.text
    run_id, thread = r.json()["id"], r.json()["thread_id"]
    # Claimed by the web process in the request's own transaction.
    assert _lease(run_id).startswith("inline@"), _lease(run_id)
    wait_all(lambda: effects(thread) == ["work1"], 15)
    time.sleep(0.3)  # in work2 (1 s), its effect not yet recorded
    web.stop(signal.SIGKILL)

    # The lease (2 s here) lapses; a worker's reaper hands the segment over.
    wait_all(lambda: AgentRun.objects.get(pk=run_id).status == "paused", 30)
    assert effects(thread) == ["work1", "work2"]  # work1 was not done again
    _web2, url2 = c.web("web2")
    api = client(url2, users["owner_token"])
    pending = AgentInterrupt.objects.get(run_id=run_id, status="pending")
    r = api.post(f"/api/runs/{run_id}/resume/", json={
        "interrupt_id": pending.interrupt_id, "payload": {"value": "after the crash"}})
    assert r.status_code == 202, r.text
    wait_all(lambda: AgentRun.objects.get(pk=run_id).status == "completed", 30)
    run = AgentRun.objects.get(pk=run_id)
    assert run.result["name"] == "after the crash"
    assert effects(thread) == ["work1", "work2", "work3", "work4"]
    assert _statuses(run_id) == STATUSES  # a takeover writes no status change
    assert AgentInterrupt.objects.get(run_id=run_id).status == "applied"


def test_a_web_process_without_a_free_slot_leaves_the_segment_to_the_worker(cluster, users):
    c = cluster(INLINE_SEGMENTS="1", SLOW_STEP_SECONDS="1")
    c.worker()
    _web, url = c.web()
    api = client(url, users["owner_token"])
    ids = []
    for _ in range(2):
        r = api.post("/api/runs/", json={"agent": "slow_counted", "input": {}})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    owners = wait_all(lambda: [o for o in map(_lease, ids) if o] if all(
        AgentRun.objects.get(pk=i).status == "running" for i in ids) else None, 20)
    assert owners[0].startswith("inline@"), owners
    assert not owners[1].startswith("inline@"), owners  # the worker's claim
    wait_all(lambda: all(AgentRun.objects.get(pk=i).status == "paused" for i in ids), 30)


@pytest.fixture
def inline_here():
    """Inline segments in this test process (as the web process has them)."""
    runner = inline.install(1)
    yield runner
    inline.install(0)
    runner.pool.shutdown(wait=True)
    from execution.checkpointer import close_checkpointer

    close_checkpointer()  # its pooled connections would keep the test database open


def _paused(users) -> AgentRun:
    run = run_start(owner=users["owner"], agent="dev", input={"topic": "inline"})
    wait_all(lambda: AgentRun.objects.get(pk=run.pk).status == "paused", 30)
    return AgentRun.objects.get(pk=run.pk)


def test_the_decision_and_the_claim_commit_together(inline_here, users):
    run = _paused(users)  # its first segment ran in this process, inline
    pending = AgentInterrupt.objects.get(run=run, status="pending")
    with pytest.raises(RuntimeError), transaction.atomic():
        interrupts_decide(actor=users["owner"], run_id=run.pk, answers=[
            Answer(interrupt_id=pending.interrupt_id, payload={"value": "rolled back"})])
        raise RuntimeError("the caller's transaction fails after the decision")
    time.sleep(0.3)
    assert AgentRun.objects.get(pk=run.pk).status == "paused"  # nothing claimed, nothing ran
    assert inline_here.busy == 0

    interrupts_decide(actor=users["owner"], run_id=run.pk, answers=[
        Answer(interrupt_id=pending.interrupt_id, payload={"value": "kept"})])
    wait_all(lambda: AgentRun.objects.get(pk=run.pk).status == "paused"
             and AgentRun.objects.get(pk=run.pk).segments == 2, 30)
    assert AgentInterrupt.objects.get(pk=pending.pk).status == "applied"
    assert _statuses(str(run.pk))[2:] == [("running", "paused"), ("paused", "resuming"),
                                         ("resuming", "running"), ("running", "paused")]
    assert inline_here.busy == 0

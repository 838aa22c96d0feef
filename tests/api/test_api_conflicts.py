"""Each conflict code of the decision endpoints, and 410 for an expired interrupt."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from tests.helpers import answer, answer_and_wait, pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def _state(run_id: str) -> tuple:
    run = AgentRun.objects.get(pk=run_id)
    return run.status, list(run.interrupts.values_list("status", flat=True)), run.segments


def test_already_decided_and_not_pending(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    first = run
    run = answer_and_wait(client, run, {"value": "A"})
    again = answer(client, first, {"value": "B"})
    assert again.status_code == 409 and again.json()["code"] == "already_decided"
    client.post(f"/api/runs/{run['id']}/cancel/")
    late = answer(client, run, {"value": "red"})
    assert late.status_code == 409 and late.json()["code"] == "not_pending"


def test_run_not_paused(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    # A worker is (still) running this run: its interrupt is pending, the run is not paused.
    AgentRun.objects.filter(pk=run["id"]).update(status="running")
    before = _state(run["id"])
    r = answer(client, run, {"value": "A"})
    assert r.status_code == 409 and r.json()["code"] == "run_not_paused"
    assert _state(run["id"]) == before
    AgentRun.objects.filter(pk=run["id"]).update(status="paused")


def test_expired_interrupt_is_410(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    AgentInterrupt.objects.filter(run_id=run["id"]).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    r = answer(client, run, {"value": "too late"})
    assert r.status_code == 410
    assert r.json()["code"] == "expired"
    db_run = AgentRun.objects.get(pk=run["id"])
    # The deadline sweep (Celery beat) then ends the run "expired": no default answer.
    assert db_run.status in ("paused", "expired") and db_run.segments == 1
    assert db_run.interrupts.get().status == "expired"
    # One audit row for the interrupt's expiry (the sweep may already have written
    # the run's own paused→expired row: a different action, counted below).
    assert AuditLog.objects.filter(run=db_run, action="interrupt.status",
                                   to_status="expired").count() == 1
    assert not AuditLog.objects.filter(run=db_run, action="decision").exists()
    again = answer(client, run, {"value": "still late"})
    assert again.status_code == 410
    assert wait_run(client, run["id"], "expired")["segments"] == 1
    assert AuditLog.objects.filter(run=db_run, to_status="expired").count() == 2
    assert AuditLog.objects.filter(run=db_run, action="run.status",
                                   to_status="expired").count() == 1
    # An interrupt whose deadline lies ahead is answered normally.
    run2 = wait_run(client, start_run(client)["id"], "paused")
    AgentInterrupt.objects.filter(run_id=run2["id"]).update(
        expires_at=timezone.now() + timedelta(hours=1))
    assert pending(client.get(f"/api/runs/{run2['id']}/").json())["expires_at"]
    assert answer(client, run2, {"value": "in time"}).status_code == 202
    wait_run(client, run2["id"], "paused")

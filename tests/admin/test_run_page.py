"""A run's admin page: timeline, audit rows, and "cancel run" through run_cancel."""

from __future__ import annotations

import pytest
from django.test import Client

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog

pytestmark = pytest.mark.django_db


def _login(user, **options) -> Client:
    client = Client(**options)
    client.force_login(user)
    return client


def _page(run_id) -> str:
    return f"/admin/runs/agentrun/{run_id}/change/"


def test_cancel_asks_first_then_cancels_and_audits(staff, paused_run):
    row = paused_run(staff["alice"], ["approval"])[0]
    client = _login(staff["reviewer"])
    page = client.get(_page(row.run_id)).content.decode()
    assert 'id="run-timeline"' in page and "Ship it?" in page
    cancel = f"/admin/runs/agentrun/{row.run_id}/cancel/"
    assert f'href="{cancel}"' in page
    confirm = client.get(cancel)
    assert confirm.status_code == 200
    assert b"1 pending interrupt will be cancelled" in confirm.content
    assert AgentRun.objects.get(pk=row.run_id).status == "paused"  # a GET changes nothing
    assert client.post(cancel).status_code == 302
    assert AgentRun.objects.get(pk=row.run_id).status == "cancelled"
    assert AgentInterrupt.objects.get(pk=row.pk).status == "cancelled"
    audit = AuditLog.objects.get(run_id=row.run_id, action="run.status", to_status="cancelled")
    assert (audit.actor, audit.surface) == (staff["reviewer"], "admin")
    assert 'id="cancel-run"' not in client.get(_page(row.run_id)).content.decode()


def test_cancel_needs_csrf_and_a_run_the_user_may_see(staff, paused_run):
    row = paused_run(staff["alice"], ["approval"])[0]
    cancel = f"/admin/runs/agentrun/{row.run_id}/cancel/"
    assert _login(staff["reviewer"], enforce_csrf_checks=True).post(cancel).status_code == 403
    clerk = _login(staff["clerk"])
    assert clerk.get(_page(row.run_id)).status_code == 302  # not theirs: "doesn't exist"
    clerk.post(cancel)
    member = _login(staff["member"])
    assert "/admin/login/" in member.post(cancel)["Location"]
    assert AgentRun.objects.get(pk=row.run_id).status == "paused"

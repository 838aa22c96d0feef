"""The decide page's Cancel button (issue 35, item 22): the shared card's, answered
through the same service as every surface. A reviewer (or staff on their own run)
cancels one question as its format says, audited on the "admin" surface; staff on
someone else's run, non-staff and anonymous visitors change nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from hitl.models import AgentInterrupt
from runs.models import AuditLog

pytestmark = pytest.mark.django_db

QUEUE = "/admin/hitl/agentinterrupt/"
CANCEL = {"_status": "cancelled"}


def _login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _change(row) -> str:
    return f"{QUEUE}{row.pk}/change/?_after=queue"


def _generic(row: AgentInterrupt) -> AgentInterrupt:
    """A question with no decline beside ``row``, on its run."""
    return AgentInterrupt.objects.create(run=row.run, interrupt_id=f"{row.interrupt_id}-g",
                                         kind="generic", request="Which bucket?")


@pytest.mark.parametrize("who", ["reviewer", "clerk"])
def test_cancel_declines_the_question_audited(staff, paused_run, who):
    # The reviewer on anyone's run; staff without the permission on their own.
    owner = staff["alice"] if who == "reviewer" else staff["clerk"]
    row = paused_run(owner, ["approval", "input"])[0]
    client = _login(staff[who])
    page = client.get(_change(row)).content.decode()
    assert 'name="_status" value="cancelled" formnovalidate' in page
    assert "Cancel this question" in page
    response = client.post(_change(row), CANCEL, follow=True)
    assert response.redirect_chain and "Cancelled: Ship it?" in response.content.decode()
    row.refresh_from_db()
    assert (row.status, row.decision, row.decided_by) == ("cancelled", None, staff[who])
    audit = AuditLog.objects.get(run=row.run, action=AuditLog.Action.DECISION)
    assert (audit.interrupt_ref, audit.to_status, audit.actor, audit.surface) == (
        row.interrupt_id, "cancelled", staff[who], "admin")
    row.run.refresh_from_db()
    assert row.run.status == "paused"  # its other question is still open


def test_cancel_of_a_question_with_no_decline_cancels_the_run(staff, paused_run):
    row = _generic(paused_run(staff["alice"], ["approval"])[0])
    client = _login(staff["reviewer"])
    assert "Cancel the run" in client.get(_change(row)).content.decode()
    response = client.post(_change(row), CANCEL, follow=True)
    assert "and with it the run" in response.content.decode()
    row.run.refresh_from_db()
    assert row.run.status == "cancelled"
    assert set(row.run.interrupts.values_list("status", flat=True)) == {"cancelled"}
    end = AuditLog.objects.get(run=row.run, action=AuditLog.Action.RUN_STATUS)
    assert (end.to_status, end.actor, end.surface) == ("cancelled", staff["reviewer"], "admin")
    assert end.payload == {"code": "question_cancelled", "interrupt_ids": [row.interrupt_id]}


@pytest.mark.parametrize("who", ["clerk", "member", "alice", None])
def test_others_cancel_nothing(staff, paused_run, who):
    # alice owns the run but is not staff: the admin is not hers (her chat page is).
    row = paused_run(staff["alice"], ["approval"])[0]
    generic = _generic(row)
    client = _login(staff[who]) if who else Client()
    for item in (row, generic):
        response = client.post(_change(item), CANCEL)
        assert response.status_code == 302
        assert ("/admin/login/" in response["Location"]) == (who != "clerk")
    row.run.refresh_from_db()
    assert row.run.status == "paused"
    assert set(row.run.interrupts.values_list("status", flat=True)) == {"pending"}
    assert not AuditLog.objects.filter(run=row.run).exists()

"""Bulk "Approve selected" / "Reject selected…": each row through the decision service."""

from __future__ import annotations

import threading

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from hitl.models import AgentInterrupt
from runs.models import AuditLog

QUEUE = "/admin/hitl/agentinterrupt/"


def _login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _action(client: Client, action: str, rows, **extra):
    return client.post(QUEUE, {"action": action, "index": 0,
                               "_selected_action": [r.pk for r in rows], **extra}, follow=True)


def _message(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


@pytest.mark.django_db
def test_approve_selected_reports_done_and_skipped(staff, paused_run):
    approval, review, question = paused_run(staff["alice"], ["approval", "review", "input"])
    decided = paused_run(staff["alice"], ["approval"])[0]
    AgentInterrupt.objects.filter(pk=decided.pk).update(status="decided")
    response = _action(_login(staff["reviewer"]), "approve_selected",
                       [approval, review, question, decided])
    assert response.status_code == 200
    text = _message(response)
    assert "2 interrupts approved" in text
    assert "2 skipped (1 already decided, 1 not approvable)" in text
    approval.refresh_from_db()
    review.refresh_from_db()
    question.refresh_from_db()
    assert approval.decision == {"approved": True} and review.decision == {"decision": "approve"}
    assert question.status == "pending"
    surfaces = set(AuditLog.objects.filter(action="decision").values_list("surface", "actor"))
    assert surfaces == {("admin", staff["reviewer"].pk)}


@pytest.mark.django_db
def test_bulk_skips_rows_the_user_may_not_decide(staff, paused_run):
    own = paused_run(staff["clerk"], ["approval"])[0]
    other = paused_run(staff["alice"], ["approval"])[0]
    response = _action(_login(staff["clerk"]), "approve_selected", [own, other])
    assert "1 interrupt approved; 1 skipped (1 not permitted)" in _message(response)
    other.refresh_from_db()
    assert other.status == "pending"


@pytest.mark.django_db
def test_reject_page_lists_only_rows_the_user_may_see(staff, paused_run):
    own = paused_run(staff["clerk"], ["approval"])[0]
    other = paused_run(staff["alice"], ["review"])[0]
    ask = _login(staff["clerk"]).post(QUEUE, {"action": "reject_selected", "index": 0,
                                              "_selected_action": [own.pk, other.pk]})
    assert b"Ship it?" in ask.content and b"Review the plan" not in ask.content


@pytest.mark.django_db
def test_reject_selected_asks_one_reason_then_rejects(staff, paused_run):
    approval, review, question = paused_run(staff["alice"], ["approval", "review", "select"])
    client = _login(staff["reviewer"])
    ask = client.post(QUEUE, {"action": "reject_selected", "index": 0,
                              "_selected_action": [approval.pk, review.pk, question.pk]})
    assert ask.status_code == 200
    assert b'name="reason"' in ask.content and b"Reject 3 selected" in ask.content
    assert AgentInterrupt.objects.filter(status="pending").count() == 3
    empty = client.post(QUEUE, {"action": "reject_selected", "post": "yes", "reason": " ",
                                "_selected_action": [approval.pk]})
    assert b"Give a reason." in empty.content
    done = client.post(QUEUE, {"action": "reject_selected", "post": "yes",
                               "reason": "out of budget", "select_across": "0",
                               "_selected_action": [approval.pk, review.pk, question.pk]},
                       follow=True)
    assert "2 interrupts rejected; 1 skipped (1 not approvable)" in _message(done)
    approval.refresh_from_db()
    review.refresh_from_db()
    assert approval.decision == {"approved": False, "reason": "out of budget"}
    assert review.decision == {"decision": "reject", "reason": "out of budget"}


def test_a_decision_made_while_the_bulk_runs_is_skipped_not_overwritten(
        live, staff_live, api):
    """Another reviewer holds one run's lock mid-decision; the bulk waits, then skips it."""
    from django.db import connection, transaction

    from execution.lifecycle import interrupts_answer
    from hitl.decide import Answer
    from tests.helpers import start_run, wait_run

    owner = api("owner")
    runs = [wait_run(owner, start_run(owner, agent="approvals")["id"], "paused")
            for _ in range(2)]
    rows = list(AgentInterrupt.objects.filter(run_id__in=[r["id"] for r in runs])
                .order_by("created_at", "id"))
    assert len(rows) == 4
    contested = rows[-1]
    locked = threading.Event()
    failure: list[BaseException] = []

    def other_reviewer() -> None:
        try:
            with transaction.atomic():
                interrupts_answer(actor=staff_live["other"], run_id=contested.run_id,
                                  surface="api", answers=[Answer(
                                      interrupt_id=contested.interrupt_id,
                                      payload={"approved": False, "reason": "mine"})])
                locked.set()
                # Commit only once the bulk action waits for this run's lock.
                with connection.cursor() as cursor:
                    while True:
                        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE "
                                       "wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
                        if cursor.fetchone()[0]:
                            break
        except BaseException as err:  # reported by the test below
            failure.append(err)
            locked.set()
        finally:
            connection.close()

    thread = threading.Thread(target=other_reviewer)
    thread.start()
    locked.wait(30)
    response = _action(_login(staff_live["reviewer"]), "approve_selected", rows)
    thread.join(30)
    assert not failure, failure
    assert "3 interrupts approved; 1 skipped (1 already decided)" in _message(response)
    contested.refresh_from_db()
    assert contested.decision == {"approved": False, "reason": "mine"}
    assert contested.decided_by == staff_live["other"]
    for run in runs:
        wait_run(owner, run["id"], {"completed", "rejected"})


@pytest.fixture
def staff_live(users):
    """On the live database: the suite's reviewer as staff, and a second reviewer."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    reviewer = users["reviewer"]
    reviewer.is_staff = True
    reviewer.save(update_fields=["is_staff"])
    other = get_user_model().objects.create_user("other", password="pw-other", is_staff=True)
    other.user_permissions.add(Permission.objects.get(codename="decide_interrupt"))
    return {"reviewer": reviewer, "other": other}

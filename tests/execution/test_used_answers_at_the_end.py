"""An answer a segment was given was used, whatever became of the segment (issue 35,
item 14): when that segment fails the answer stays answered (not "cancelled", and the
card does not say the agent never used it; a retry gives it again), and when the run is
cancelled while the segment runs it is applied. Only an answer no segment was given
(the run was still paused or resuming) is closed as cancelled, keeping the decision."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.template.loader import render_to_string
from django.test import Client

from execution import lifecycle
from hitl import lifecycle as hitl_lifecycle
from hitl.cards import card_context
from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from runs.services import run_start
from tests.accounts import make_superuser
from tests.helpers import answer, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def _card_html(item: AgentInterrupt) -> str:
    item = AgentInterrupt.objects.select_related("run", "decided_by").get(pk=item.pk)
    return render_to_string("hitl/cards/card.html",
                            {"card": card_context(item, action_url="/a/", preview=True)})


def test_a_failed_segments_answer_stays_answered_and_says_so(api):
    client = api("owner")
    run = wait_run(client, start_run(client, agent="faulty")["id"], "paused")
    assert answer(client, run, {"value": "hello"}).status_code == 202
    failed = wait_run(client, run["id"], "failed")
    assert "boom after 'hello'" in failed["error"]  # the agent used the answer

    item = AgentInterrupt.objects.get(run_id=run["id"])
    assert (item.status, item.decision) == ("decided", {"value": "hello"})
    assert not AuditLog.objects.filter(run_id=run["id"], interrupt_ref=item.interrupt_id,
                                       to_status="cancelled").exists()
    html = _card_html(item)
    assert "Answered by" in html and "ended before the agent used" not in html
    assert "The run failed after the agent received this answer" in html
    # The admin's timeline says so too.
    admin = Client()
    admin.force_login(make_superuser("boss"))
    page = admin.get(f"/admin/runs/agentrun/{run['id']}/change/").content.decode()
    row = page.split(f'data-interrupt-id="{item.interrupt_id}"')[1].split("</tr>")[0]
    assert "input</a> · decided" in row and "cancelled" not in row

    # A retry goes on after it (the graph had taken it): it fails the same way again,
    # and the answer is still the one the agent used.
    assert client.post(f"/api/runs/{run['id']}/retry/").status_code == 200
    again = wait_run(client, run["id"], "failed")
    assert "boom after 'hello'" in again["error"]
    item.refresh_from_db()
    assert (item.status, item.decision) == ("decided", {"value": "hello"})


def _with_answer(owner, status: str) -> tuple[AgentRun, AgentInterrupt]:
    """A run in ``status`` whose one question was answered (not yet applied)."""
    run = run_start(owner=owner, agent="dev", input={"topic": "x"})
    with transaction.atomic():
        locked = AgentRun.objects.select_for_update().get(pk=run.pk)
        hitl_lifecycle.interrupts_open(run=locked, requests=[
            ("c" * 32, {"type": "input", "message": "Name it"})])
    AgentInterrupt.objects.filter(run=run).update(status="decided", decision={"value": "v"},
                                                  decided_by=owner)
    AgentRun.objects.filter(pk=run.pk).update(status=status, segments=2)
    return run, AgentInterrupt.objects.get(run=run)


@pytest.mark.parametrize("status", ["running", "retrying"])
def test_cancel_while_a_segment_has_the_answer_applies_it(users, unconsumed_queue, status):
    run, item = _with_answer(users["owner"], status)
    lifecycle.run_cancel(actor=users["owner"], run_id=run.pk, surface="api")
    item.refresh_from_db()
    assert item.status == "applied" and item.applied_at is not None
    assert item.decision == {"value": "v"}
    assert "ended before the agent used" not in _card_html(item)


@pytest.mark.parametrize("status", ["running", "retrying"])
def test_fail_while_a_segment_has_the_answer_keeps_it_answered(users, unconsumed_queue,
                                                               status):
    run, item = _with_answer(users["owner"], status)
    lifecycle.run_fail(run_id=str(run.pk), error="boom")
    item.refresh_from_db()
    assert (item.status, item.applied_at) == ("decided", None)


@pytest.mark.parametrize("end", ["cancel", "fail"])
def test_an_answer_no_segment_was_given_is_closed_unused(users, unconsumed_queue, end):
    run, item = _with_answer(users["owner"], "resuming")
    if end == "cancel":
        lifecycle.run_cancel(actor=users["owner"], run_id=run.pk, surface="api")
    else:
        lifecycle.run_fail(run_id=str(run.pk), error="boom")
    item.refresh_from_db()
    assert (item.status, item.decision) == ("cancelled", {"value": "v"})
    assert "The run ended before the agent used this answer" in _card_html(item)

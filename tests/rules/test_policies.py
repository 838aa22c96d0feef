"""Policies in the decision service: four-eyes, assignment, quorum, deadlines."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agentsite.errors import Conflict, Forbidden, Gone
from hitl.decide import Answer, interrupts_decide
from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog


def _decide(run, who, approved=True):  # noqa: ANN001, ANN202
    return interrupts_decide(actor=who, run_id=run.pk, surface="api", answers=[
        Answer(interrupt_id="i-1", payload={"approved": approved})])


def test_four_eyes_refuses_the_requester(paused_run, people,
                                         django_capture_on_commit_callbacks) -> None:
    run = paused_run(requester_may_decide=False)
    with pytest.raises(Forbidden) as err:
        _decide(run, people["owner"])
    assert err.value.code == "requester_may_not_decide"
    with django_capture_on_commit_callbacks():
        _decide(run, people["reviewer"])
    assert AgentInterrupt.objects.get(run=run).status == "decided"


def test_an_assigned_interrupt_refuses_other_reviewers(paused_run, people) -> None:
    run = paused_run()
    AgentInterrupt.objects.get(run=run).assignees.add(people["second_reviewer"])
    with pytest.raises(Forbidden) as err:
        _decide(run, people["reviewer"])
    assert err.value.code == "not_assigned"
    assert AgentInterrupt.objects.get(run=run).status == "pending"


def test_a_quorum_needs_two_approvals_from_two_people(
        paused_run, people, django_capture_on_commit_callbacks) -> None:
    run = paused_run(required_approvals=2)
    with django_capture_on_commit_callbacks():
        _decide(run, people["reviewer"])
    row = AgentInterrupt.objects.get(run=run)
    assert row.status == "pending" and row.votes.count() == 1
    with pytest.raises(Conflict) as err:  # one person, one vote
        _decide(run, people["reviewer"])
    assert err.value.code == "already_voted"
    with django_capture_on_commit_callbacks():
        _decide(run, people["second_reviewer"])
    row.refresh_from_db()
    assert row.status == "decided" and row.decision["approved"] is True
    assert [v["user"] for v in row.decision["votes"]] == ["reviewer", "second_reviewer"]
    assert AgentRun.objects.get(pk=run.pk).status == "resuming"


def test_one_rejection_settles_a_quorum(paused_run, people,
                                        django_capture_on_commit_callbacks) -> None:
    run = paused_run(required_approvals=2)
    with django_capture_on_commit_callbacks():
        _decide(run, people["reviewer"], approved=False)
    row = AgentInterrupt.objects.get(run=run)
    assert row.status == "decided" and row.decision["approved"] is False


def test_a_late_answer_is_gone_and_the_expiry_is_audited(paused_run, people) -> None:
    run = paused_run(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(Gone):
        _decide(run, people["owner"])
    assert AgentInterrupt.objects.get(run=run).status == "expired"
    assert AuditLog.objects.filter(run=run, action="interrupt.status",
                                   to_status="expired").exists()


def test_a_late_answer_with_a_default_leaves_it_to_the_sweep(paused_run, people) -> None:
    run = paused_run(expires_at=timezone.now() - timedelta(seconds=1),
                     default_answer={"approved": False})
    with pytest.raises(Gone):
        _decide(run, people["owner"])
    assert AgentInterrupt.objects.get(run=run).status == "pending"

"""interrupts_decide: who may decide, exactly once, validated, audited, resumed on commit."""

from __future__ import annotations

import pytest

from agentsite.errors import Conflict, InvalidInput, NotFound
from hitl.decide import Answer, interrupts_decide
from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog


def _decide(run, who, payload=None, ids=("i-1",)):  # noqa: ANN001, ANN202
    return interrupts_decide(actor=who, run_id=run.pk, surface="api", answers=[
        Answer(interrupt_id=i, payload=payload or {"approved": True}) for i in ids])


def test_owner_decides_once_and_the_run_resumes(paused_run, people,
                                                django_capture_on_commit_callbacks) -> None:
    run = paused_run()
    with django_capture_on_commit_callbacks() as callbacks:
        _decide(run, people["owner"])
    assert callbacks, "the resume is enqueued on commit"
    row = AgentInterrupt.objects.get(run=run)
    assert (row.status, row.decision, row.decided_by) == (
        "decided", {"approved": True}, people["owner"])
    assert AgentRun.objects.get(pk=run.pk).status == "resuming"
    trail = list(AuditLog.objects.filter(run=run).exclude(to_status="queued")
                 .values_list("action", "from_status", "to_status"))
    assert ("decision", "pending", "decided") in trail
    assert ("run.status", "paused", "resuming") in trail
    # A second decision finds nothing pending: 409, and nothing changes.
    with pytest.raises(Conflict) as err:
        _decide(run, people["reviewer"], {"approved": False})
    assert err.value.status == 409
    assert AgentInterrupt.objects.get(run=run).decision == {"approved": True}


def test_reviewer_may_decide_an_outsider_may_not(paused_run, people,
                                                 django_capture_on_commit_callbacks) -> None:
    run = paused_run()
    with pytest.raises(NotFound):  # the outsider does not even see the run
        _decide(run, people["outsider"])
    assert AgentInterrupt.objects.get(run=run).status == "pending"
    with django_capture_on_commit_callbacks():
        _decide(run, people["reviewer"])
    assert AgentInterrupt.objects.get(run=run).decided_by == people["reviewer"]


def test_invalid_payload_and_unknown_interrupt_are_refused(paused_run, people) -> None:
    run = paused_run()
    with pytest.raises(InvalidInput):
        _decide(run, people["owner"], {"approved": "maybe"})
    with pytest.raises(NotFound):
        _decide(run, people["owner"], ids=("i-404",))
    assert AgentInterrupt.objects.get(run=run).status == "pending"
    assert not AuditLog.objects.filter(run=run, action="decision").exists()


def test_the_run_resumes_only_when_no_interrupt_is_left(
        paused_run, people, django_capture_on_commit_callbacks) -> None:
    run = paused_run(count=2)
    with django_capture_on_commit_callbacks():
        _decide(run, people["owner"], ids=("i-1",))
    assert AgentRun.objects.get(pk=run.pk).status == "paused"
    with django_capture_on_commit_callbacks():
        _decide(run, people["owner"], ids=("i-2",))
    assert AgentRun.objects.get(pk=run.pk).status == "resuming"


def test_a_run_not_paused_is_refused(paused_run, people) -> None:
    run = paused_run()
    AgentRun.objects.filter(pk=run.pk).update(status="running")
    with pytest.raises(Conflict):
        _decide(run, people["owner"])

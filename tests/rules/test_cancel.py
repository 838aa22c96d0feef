"""run_cancel: owner or reviewer, once; open questions cancelled with the run, audited."""

from __future__ import annotations

import pytest

from agentsite.errors import Conflict, NotFound
from execution.lifecycle import run_cancel
from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog


def test_owner_cancels_a_paused_run_and_its_questions(
        paused_run, people, django_capture_on_commit_callbacks) -> None:
    run = paused_run()
    with django_capture_on_commit_callbacks() as callbacks:
        run_cancel(actor=people["owner"], run_id=run.pk, surface="api")
    assert callbacks, "listeners are told on commit"
    assert AgentRun.objects.get(pk=run.pk).status == "cancelled"
    assert AgentInterrupt.objects.get(run=run).status == "cancelled"
    assert AuditLog.objects.filter(run=run, action="run.status", from_status="paused",
                                   to_status="cancelled", actor=people["owner"]).exists()
    with pytest.raises(Conflict) as err:  # a second cancel
        run_cancel(actor=people["owner"], run_id=run.pk)
    assert err.value.code == "run_finished"


def test_a_queued_run_is_cancelled_by_a_reviewer(paused_run, people,
                                                 django_capture_on_commit_callbacks) -> None:
    run = paused_run(count=0)
    AgentRun.objects.filter(pk=run.pk).update(status="queued")
    with django_capture_on_commit_callbacks():
        run_cancel(actor=people["reviewer"], run_id=run.pk, surface="admin")
    assert AgentRun.objects.get(pk=run.pk).status == "cancelled"


def test_an_outsider_cannot_cancel(paused_run, people) -> None:
    run = paused_run()
    with pytest.raises(NotFound):
        run_cancel(actor=people["outsider"], run_id=run.pk)
    with pytest.raises(NotFound):
        run_cancel(actor=people["owner"], run_id="not-a-uuid")
    assert AgentRun.objects.get(pk=run.pk).status == "paused"

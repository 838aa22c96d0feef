"""run_start: a queued run with its conversation, messages and audit row, enqueued on
commit; refusals before anything is written."""

from __future__ import annotations

import pytest

from agentsite.errors import Conflict, InvalidInput, NotFound
from runs.models import AgentRun, AuditLog, Conversation, Message
from runs.services import run_start


def test_start_writes_a_queued_run_and_enqueues_it_on_commit(
        people, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        run = run_start(owner=people["owner"], agent="dev", message="hello", surface="api")
    assert len(callbacks) >= 1  # the task is sent after commit, not before
    run = AgentRun.objects.get(pk=run.pk)
    assert (run.status, run.owner, run.agent) == ("queued", people["owner"], "dev")
    assert Conversation.objects.get(pk=run.conversation_id).owner == people["owner"]
    roles = list(Message.objects.filter(run=run).order_by("created_at", "role")
                 .values_list("role", "content"))
    assert ("user", "hello") in roles and ("assistant", "") in roles
    audit = AuditLog.objects.get(run=run)
    assert (audit.action, audit.to_status, audit.actor, audit.surface) == (
        "run.status", "queued", people["owner"], "api")


def test_unknown_agent_and_bad_input_write_nothing(people) -> None:
    with pytest.raises(NotFound):
        run_start(owner=people["owner"], agent="no-such-agent")
    with pytest.raises(InvalidInput):
        run_start(owner=people["owner"], agent="dev", input={"nope": object()})
    assert not AgentRun.objects.exists() and not Conversation.objects.exists()


def test_a_busy_thread_refuses_a_second_run(people, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks():
        first = run_start(owner=people["owner"], agent="dev")
    with pytest.raises(Conflict) as err:
        run_start(owner=people["owner"], agent="dev", thread_id=str(first.thread_id))
    assert err.value.code == "thread_busy"
    # Someone else's thread is not found, not busy.
    with pytest.raises(NotFound):
        run_start(owner=people["outsider"], agent="dev", thread_id=str(first.thread_id))
    assert AgentRun.objects.count() == 1

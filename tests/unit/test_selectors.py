"""Who may decide: the owner, or a reviewer (hitl.decide_interrupt); nobody else."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, Permission

from hitl.models import AgentInterrupt
from hitl.selectors import can_decide, decidable_interrupts, decidable_runs, pending_interrupts
from runs.models import AgentRun, Conversation

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(django_user_model):
    made = {n: django_user_model.objects.create_user(n) for n in ("owner", "reviewer", "other")}
    made["reviewer"].user_permissions.add(Permission.objects.get(codename="decide_interrupt"))
    return made


@pytest.fixture
def run(people):
    conversation = Conversation.objects.create(owner=people["owner"], agent="dev")
    run = AgentRun.objects.create(owner=people["owner"], conversation=conversation, agent="dev",
                                  agent_version="1", thread_id=conversation.thread_id,
                                  status="paused")
    AgentInterrupt.objects.create(run=run, interrupt_id="a", kind="input",
                                  request={"type": "input"})
    AgentInterrupt.objects.create(run=run, interrupt_id="b", kind="input",
                                  request={"type": "input"}, status="decided")
    return run


def test_can_decide(people, run):
    assert can_decide(people["owner"], run) and can_decide(people["owner"], run.conversation)
    assert can_decide(people["reviewer"], run)
    assert not can_decide(people["other"], run)
    assert not can_decide(AnonymousUser(), run) and not can_decide(None, run)


def test_decidable_sets(people, run):
    assert list(decidable_runs(people["owner"])) == [run]
    assert list(decidable_runs(people["reviewer"])) == [run]
    assert not decidable_runs(people["other"]).exists()
    assert decidable_interrupts(people["reviewer"]).count() == 2
    assert not decidable_interrupts(people["other"]).exists()


def test_pending_interrupts(run):
    assert [i.interrupt_id for i in pending_interrupts(run)] == ["a"]

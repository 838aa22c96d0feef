"""Compiled querysets (agentsite.compiled): the same rows as the queryset they come from."""

from __future__ import annotations

import uuid

import pytest
from django.db import transaction
from django.db.transaction import TransactionManagementError

from agentsite.compiled import Compiled
from hitl.models import AgentInterrupt
from hitl.selectors import ASSIGNMENT_IDS
from runs.models import AgentRun, Conversation


def _fields(obj) -> dict:
    return {k: v for k, v in vars(obj).items() if k != "_state"}


@pytest.fixture
def run(users) -> AgentRun:
    owner = users["owner"]
    conversation = Conversation.objects.create(owner=owner, agent="dev")
    run = AgentRun.objects.create(owner=owner, conversation=conversation, agent="dev",
                                  thread_id=conversation.thread_id, input={"topic": "x"})
    for n, request in enumerate([{"type": "input", "message": "Name?"},
                                 {"type": "approval", "details": {"a": [1, 2]}}]):
        row = AgentInterrupt.objects.create(run=run, interrupt_id=f"q{n}", kind="input",
                                            request=request)
    row.assignees.add(users["reviewer"])
    return run


def test_rows_annotations_and_json_match_the_queryset(run, users):
    def build(run_id):
        return (AgentInterrupt.objects.filter(run_id=run_id).order_by("id")
                .annotate(**ASSIGNMENT_IDS))

    compiled = Compiled(build, run_id=uuid.UUID)
    for _ in range(2):  # compiled once, then run again from the plan
        got = compiled.all(run_id=run.pk)
        expected = list(build(run.pk))
        assert [_fields(o) for o in got] == [_fields(o) for o in expected]
    assert [o.request for o in got][1] == {"type": "approval", "details": {"a": [1, 2]}}
    assert [o.assignee_ids for o in got] == [[], [users["reviewer"].pk]]
    assert not got[0]._state.adding and got[0]._state.db == "default"
    got[0].status = "decided"
    got[0].save(update_fields=["status"])  # a normal model instance
    assert AgentInterrupt.objects.get(pk=got[0].pk).status == "decided"
    assert compiled.all(run_id=uuid.uuid4()) == []


def test_string_values_and_first(db):
    from django.contrib.auth import get_user_model

    User = get_user_model()
    User.objects.create_user("someone", "s@example.com", "pw")
    by_name = Compiled(lambda name: User.objects.filter(username=name), name=str)
    assert by_name.first(name="someone").email == "s@example.com"
    assert by_name.first(name="nobody") is None
    assert by_name.first(name="x' OR '1'='1") is None  # a value, never SQL


def test_a_locking_read_needs_a_transaction(run):
    lock = Compiled(lambda pk: AgentRun.objects.select_for_update().filter(pk=pk),
                    pk=uuid.UUID)
    with transaction.atomic():
        assert lock.first(pk=run.pk).pk == run.pk
    with pytest.raises(TransactionManagementError):
        lock.first(pk=run.pk)


def test_only_plain_querysets(run):
    with pytest.raises(ValueError):
        Compiled(lambda pk: AgentRun.objects.select_related("owner").filter(pk=pk),
                 pk=uuid.UUID).all(pk=run.pk)
    with pytest.raises(ValueError):
        Compiled(lambda pk: AgentRun.objects.filter(pk=pk).only("id"),
                 pk=uuid.UUID).all(pk=run.pk)

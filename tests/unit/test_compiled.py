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
    by_id = {o.interrupt_id: o for o in got}  # ordered by a random uuid: look up by name
    assert by_id["q1"].request == {"type": "approval", "details": {"a": [1, 2]}}
    assert (by_id["q0"].assignee_ids, by_id["q1"].assignee_ids) == ([], [users["reviewer"].pk])
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


def test_save_fields_is_save_with_update_fields(run, users):
    from django.db import DatabaseError

    from agentsite.compiled import save_fields

    row = AgentInterrupt.objects.get(run=run, interrupt_id="q0")
    before = AgentRun.objects.get(pk=run.pk).updated_at
    row.status, row.decision, row.decided_by = "decided", {"value": ["a", None]}, users["owner"]
    row.decided_at = before
    save_fields(row, ["status", "decision", "decided_by", "decided_at"])
    again = AgentInterrupt.objects.get(pk=row.pk)
    assert (again.status, again.decision, again.decided_by_id, again.decided_at) == (
        "decided", {"value": ["a", None]}, users["owner"].pk, before)
    assert again.kind == "input"  # fields not named are left alone
    run.status = "paused"
    save_fields(run, ["status", "updated_at"])  # auto_now, as save() sets it
    assert run.updated_at > before
    assert AgentRun.objects.get(pk=run.pk).updated_at == run.updated_at
    row.decision = None
    save_fields(row, ["decision"])
    assert AgentInterrupt.objects.get(pk=row.pk).decision is None  # SQL NULL, as save()
    gone = AgentRun(pk=uuid.uuid4())
    with pytest.raises(DatabaseError):
        save_fields(gone, ["status"])
    with pytest.raises(ValueError):
        save_fields(run, ["id"])


def test_insert_is_bulk_create(run, users):
    from django.db import IntegrityError

    from agentsite.compiled import insert
    from runs.models import AuditLog
    from runs.services import audit_row

    rows = [audit_row(run=run, action="decision", actor=users["owner"], interrupt_ref="q0",
                      payload={"value": 1}, surface="api"),
            audit_row(run=run, action="run_status", from_status="paused",
                      to_status="resuming")]
    insert(rows)
    assert all(r.pk and not r._state.adding for r in rows)
    stored = list(AuditLog.objects.filter(pk__in=[r.pk for r in rows]).order_by("id"))
    assert [(a.action, a.actor_id, a.actor_label, a.payload, a.created_at) for a in stored] == [
        (r.action, r.actor_id, r.actor_label, r.payload, r.created_at) for r in rows]
    assert stored[0].created_at is not None and stored[1].payload is None
    question = AgentInterrupt(run=run, interrupt_id="q9", kind="input", request={"x": 1})
    insert([question])  # a uuid key made in Python goes in as given
    assert AgentInterrupt.objects.get(pk=question.pk).request == {"x": 1}
    with pytest.raises(IntegrityError), transaction.atomic():
        insert([AgentInterrupt(run=run, interrupt_id="q9", kind="input", request={})])


def test_token_authentication_answers_as_drf(run, users):
    from rest_framework import authentication, exceptions
    from rest_framework.authtoken.models import Token

    from agentsite.token_auth import TokenAuthentication

    owner = users["owner"]
    token, _ = Token.objects.get_or_create(user=owner)
    ours, stock = TokenAuthentication(), authentication.TokenAuthentication()
    user, auth = ours.authenticate_credentials(token.key)
    stock_user, stock_auth = stock.authenticate_credentials(token.key)
    assert _fields(user) == _fields(stock_user)  # no extra attribute left on the user
    assert (auth.key, auth.user_id, auth.created, auth.user) == (
        stock_auth.key, stock_auth.user_id, stock_auth.created, user)
    assert not auth._state.adding
    for key in ["nope", token.key + "x", "' OR '1'='1", ""]:
        with pytest.raises(exceptions.AuthenticationFailed, match="Invalid token"):
            ours.authenticate_credentials(key)
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    with pytest.raises(exceptions.AuthenticationFailed, match="inactive"):
        ours.authenticate_credentials(token.key)


def test_agui_resume_finds_the_run_of_one_interrupt_as_the_queryset(run, users):
    from agui.views import _runs_holding

    other = AgentRun.objects.create(owner=users["outsider"], conversation=run.conversation,
                                    agent="dev", thread_id="another", input={})
    AgentInterrupt.objects.create(run=other, interrupt_id="q0", kind="input", request={})
    found = _runs_holding(run.thread_id, "dev", ["q0"])
    assert [_fields(r) for r in found] == [_fields(AgentRun.objects.get(pk=run.pk))]
    assert _runs_holding(run.thread_id, "dev", ["q0", "q0"])[0].pk == run.pk
    assert {r.pk for r in _runs_holding(run.thread_id, "dev", ["q0", "q1"])} == {run.pk}
    assert _runs_holding(run.thread_id, "other-agent", ["q0"]) == []
    assert _runs_holding("another", "dev", ["q1"]) == []
    assert [r.pk for r in _runs_holding("another", "dev", ["q0"])] == [other.pk]


def test_together_reads_in_one_round_trip_as_each_alone(run, users):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agentsite.compiled import together

    runs = Compiled(lambda pk: AgentRun.objects.select_for_update().filter(pk=pk), pk=uuid.UUID)
    rows = Compiled(lambda run_id: AgentInterrupt.objects.select_for_update().filter(
        run_id=run_id).order_by("interrupt_id").annotate(**ASSIGNMENT_IDS), run_id=uuid.UUID)
    with transaction.atomic():
        alone = (runs.all(pk=run.pk), rows.all(run_id=run.pk))
        with CaptureQueriesContext(connection) as sent:
            both = together((runs, {"pk": run.pk}), (rows, {"run_id": run.pk}))
        assert len(sent) == 1
        assert [[_fields(o) for o in found] for found in both] == [
            [_fields(o) for o in found] for found in alone]
        assert [o.interrupt_id for o in both[1]] == ["q0", "q1"]
        assert both[1][1].assignee_ids == [users["reviewer"].pk]
        assert together((runs, {"pk": uuid.uuid4()}), (rows, {"run_id": uuid.uuid4()})) == [
            [], []]


def test_compiled_update_is_the_querysets_update_for_any_list(run):
    from datetime import UTC, datetime

    from django.db.models import F

    from agentsite.compiled import AnyOf, CompiledUpdate, batched

    mark = CompiledUpdate(lambda run_id, ids, now: (
        AgentInterrupt.objects.filter(AnyOf(F("interrupt_id"), ids), run_id=run_id),
        {"status": "applied", "applied_at": now}), run_id=uuid.UUID, ids=list, now=datetime)
    first = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    with transaction.atomic(), batched():
        mark.later(run_id=run.pk, ids=["q1"], now=first)  # compiled here, sent at the end
    rows = {r.interrupt_id: r for r in AgentInterrupt.objects.filter(run=run)}
    assert (rows["q0"].status, rows["q0"].applied_at) == ("pending", None)
    assert (rows["q1"].status, rows["q1"].applied_at) == ("applied", first)
    second = datetime(2026, 2, 1, tzinfo=UTC)
    mark.later(run_id=run.pk, ids=["q0", "q1", "q'9"], now=second)  # another length, at once
    assert {r.interrupt_id: r.applied_at for r in AgentInterrupt.objects.filter(run=run)} == {
        "q0": second, "q1": second}
    mark.later(run_id=uuid.uuid4(), ids=["q0"], now=first)  # another run: nothing
    assert set(AgentInterrupt.objects.filter(run=run).values_list("applied_at", flat=True)) \
        == {second}
    # The same rows as the ORM's own lookup, with the list as one value.
    assert list(AgentInterrupt.objects.filter(AnyOf(F("interrupt_id"), ["q1", "x"]))
                .values_list("interrupt_id", flat=True)) == ["q1"]
    with pytest.raises(ValueError):  # a value the SQL does not hold is refused
        CompiledUpdate(lambda pk, text: (AgentRun.objects.filter(pk=pk), {"error": "x"}),
                       pk=uuid.UUID, text=str).later(pk=run.pk, text="y")

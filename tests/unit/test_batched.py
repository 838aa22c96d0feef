"""Deferred writes (agentsite.compiled.batched): sent with the next statement, in one
round trip, with their checks and returned ids; never lost, never committed alone."""

from __future__ import annotations

import uuid

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from agentsite.compiled import batched, insert, save_fields, update_later
from runs.models import AgentRun, AuditLog, Conversation
from runs.services import audit_row


@pytest.fixture
def run(users) -> AgentRun:
    owner = users["owner"]
    conversation = Conversation.objects.create(owner=owner, agent="dev")
    return AgentRun.objects.create(owner=owner, conversation=conversation, agent="dev",
                                   thread_id=conversation.thread_id, input={"topic": "x"})


def test_deferred_writes_travel_with_the_next_statement(run, users):
    rows = [audit_row(run=run, action="run_status", from_status="queued", to_status="running"),
            audit_row(run=run, action="decision", actor=users["owner"], payload={"v": "a%s'"})]
    with transaction.atomic(), batched(), CaptureQueriesContext(connection) as sent:
        run.status = "running"
        save_fields(run, ["status", "updated_at"], defer=True)
        insert(rows, defer=True)
        update_later(AgentRun.objects.filter(pk=run.pk), error="50% done; 'quoted'")
        assert len(sent) == 0 and rows[0].pk is None  # nothing sent yet
        # An ORM read carries them, and reads its own result (after the writes).
        again = AgentRun.objects.get(pk=run.pk)
        assert len(sent) == 1  # one round trip for four statements
        assert (again.status, again.error) == ("running", "50% done; 'quoted'")
        assert all(r.pk and not r._state.adding for r in rows)  # ids as bulk_create sets
    stored = list(AuditLog.objects.filter(run=run).order_by("id"))
    assert [(a.pk, a.action, a.payload) for a in stored] == [
        (r.pk, r.action, r.payload) for r in rows]


def test_what_is_left_goes_out_at_the_end_of_the_block(run):
    with transaction.atomic():
        with CaptureQueriesContext(connection) as sent, batched():
            run.status = "paused"
            save_fields(run, ["status"], defer=True)
            update_later(AgentRun.objects.filter(pk=run.pk), error="e")
        assert len(sent) == 1
        # A statement with no values (a % is not a placeholder there) goes after them.
        with batched():
            update_later(AgentRun.objects.filter(pk=run.pk), error="f")
            with connection.cursor() as cursor:
                cursor.execute("SELECT error FROM runs_agentrun WHERE error LIKE 'f%'")
                assert cursor.fetchall() == [("f",)]
    assert AgentRun.objects.filter(pk=run.pk, status="paused", error="f").exists()


def test_a_failed_check_fails_the_transaction(run):
    gone = AgentRun(pk=uuid.uuid4())
    with pytest.raises(DatabaseError, match="did not affect any rows"), transaction.atomic(), \
            batched():
        update_later(AgentRun.objects.filter(pk=run.pk), error="never")
        save_fields(gone, ["status"], defer=True)
        AgentRun.objects.filter(pk=run.pk).exists()  # the carrier: the check runs here
    assert AgentRun.objects.get(pk=run.pk).error == ""  # rolled back with it


def test_an_error_drops_pending_writes_and_the_transaction_cannot_commit(run):
    with transaction.atomic():
        AgentRun.objects.filter(pk=run.pk).update(error="sent at once")
        try:
            with batched():
                update_later(AgentRun.objects.filter(pk=run.pk), status="failed")
                raise ValueError("boom")
        except ValueError:
            pass  # a caller that swallows the error does not commit half a change
        assert transaction.get_rollback()
    assert AgentRun.objects.get(pk=run.pk).error == ""


def test_outside_a_block_a_deferred_write_is_sent_at_once(run):
    run.status = "paused"
    save_fields(run, ["status"], defer=True)
    update_later(AgentRun.objects.filter(pk=run.pk), error="now")
    assert AgentRun.objects.filter(pk=run.pk, status="paused", error="now").exists()
    with pytest.raises(TransactionManagementError), batched():
        pass  # batching is only for a transaction


def test_nested_blocks_send_once_from_the_outer_one(run):
    with transaction.atomic(), CaptureQueriesContext(connection) as sent, batched():
        with batched():
            update_later(AgentRun.objects.filter(pk=run.pk), error="inner")
        assert len(sent) == 0
        update_later(AgentRun.objects.filter(pk=run.pk), status="paused")
    assert len(sent) == 1
    assert AgentRun.objects.filter(pk=run.pk, status="paused", error="inner").exists()


def test_a_savepoint_rolled_back_takes_its_waiting_writes(run):
    from django.db import DatabaseError as Error

    with transaction.atomic(), batched():
        update_later(AgentRun.objects.filter(pk=run.pk), error="before")
        try:
            with transaction.atomic():  # SAVEPOINT: "before" goes out first
                with connection.cursor() as cursor:
                    try:
                        cursor.execute("SELECT 1/0")  # the transaction is now in error
                    except Error:
                        pass
                update_later(AgentRun.objects.filter(pk=run.pk), status="failed")
                raise ValueError("rolled back, with the write made inside")
        except ValueError:
            pass
        update_later(AgentRun.objects.filter(pk=run.pk), result={"after": True})
    again = AgentRun.objects.get(pk=run.pk)
    assert (again.error, again.status, again.result) == ("before", "queued", {"after": True})


def test_an_answered_interrupt_raised_again_is_refused_by_name(run):
    from hitl.models import AgentInterrupt
    from hitl.services import interrupts_open, raised_again_refused

    AgentInterrupt.objects.create(run=run, interrupt_id="q1", kind="input", request={},
                                  status="applied")
    with pytest.raises(RuntimeError, match="raised again after it was answered"):
        with raised_again_refused(), transaction.atomic(), batched():
            interrupts_open(run=run, requests=[("q2", {"type": "input"}),
                                               ("q1", {"type": "input"})], audits=[])
    # Nothing of the transaction stayed: not the other question, not an audit row.
    assert list(AgentInterrupt.objects.filter(run=run).values_list("interrupt_id", "status")) \
        == [("q1", "applied")]
    assert not AuditLog.objects.filter(run=run).exists()
    with pytest.raises(DatabaseError), raised_again_refused():  # other errors as they are
        with transaction.atomic():
            AgentRun.objects.create(pk=run.pk, owner=run.owner, conversation=run.conversation,
                                    agent="dev", thread_id="t", input={})


def test_a_transaction_marked_for_rollback_sends_none_of_its_waiting_writes(run):
    with CaptureQueriesContext(connection) as sent, transaction.atomic(), batched():
        update_later(AgentRun.objects.filter(pk=run.pk), error="marked")
        transaction.set_rollback(True)  # as a caught error in an inner block would
    assert not [q for q in sent if q["sql"].startswith("UPDATE")]
    assert AgentRun.objects.get(pk=run.pk).error == ""

"""runs.sql, the hot path's plain SQL: the lock reads the run as the ORM does, the claim's
lock commits without the WAL flush and nothing else does, and one statement writes a
status change with its audit rows (issue 37)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from runs.services import audit_row, run_locked
from runs.sql import insert_of, run_lock, run_update, writes_together


def _sync_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


def test_the_lock_reads_the_run_as_the_orm_does(paused_run) -> None:
    run = paused_run()
    AgentRun.objects.filter(pk=run.pk).update(
        result={"r": [1, "two", None]}, stream_modes=["values"], metadata={"a": {"b": 1}},
        lease_expires_at=timezone.now() + timedelta(seconds=30))
    expected = AgentRun.objects.get(pk=run.pk)
    with transaction.atomic():
        locked = run_lock(run.pk)
    for field in AgentRun._meta.concrete_fields:
        assert getattr(locked, field.attname) == getattr(expected, field.attname), field.name
    assert run_lock("00000000-0000-0000-0000-000000000000") is None
    assert run_locked(run.pk).pk == run.pk


@pytest.mark.django_db(transaction=True)  # SET LOCAL lasts until the real commit
def test_only_the_claims_lock_skips_the_wal_flush(paused_run) -> None:
    run = paused_run()
    with transaction.atomic():
        run_lock(run.pk, claim=True)
        assert _sync_commit() == "off"
    with transaction.atomic():
        run_lock(run.pk)
        assert _sync_commit() == "on"


def test_a_status_change_and_its_audit_rows_are_one_statement(paused_run) -> None:
    run = paused_run()
    with transaction.atomic():
        locked = run_lock(run.pk)
        before = locked.updated_at
        locked.status = AgentRun.Status.RESUMING
        rows = [audit_row(run=locked, action=AuditLog.Action.RUN_STATUS, from_status="paused",
                          to_status="resuming", payload={"n": i}) for i in range(2)]
        statements = []
        with connection.execute_wrapper(lambda run_sql, *a: statements.append(a[0])
                                        or run_sql(*a)):
            run_update(run=locked, fields=["status"], audits=rows)
    assert len(statements) == 1
    stored = AgentRun.objects.get(pk=run.pk)
    assert stored.status == "resuming" and stored.updated_at > before
    saved = list(AuditLog.objects.filter(run=run, action="run.status", to_status="resuming"))
    assert [a.payload for a in saved] == [{"n": 0}, {"n": 1}]
    assert [r.pk for r in rows] == [a.pk for a in saved]


def test_a_failing_write_takes_the_whole_statement_with_it(paused_run) -> None:
    run = paused_run()  # holds interrupt "i-1"
    again = AgentInterrupt(run=run, interrupt_id="i-1", kind="approval", request={})
    with pytest.raises(IntegrityError), transaction.atomic():
        locked = run_lock(run.pk)
        locked.status = AgentRun.Status.RESUMING
        writes_together(writes=[insert_of([again])], audits=[audit_row(
            run=locked, action=AuditLog.Action.RUN_STATUS, to_status="resuming")])
    assert AgentRun.objects.get(pk=run.pk).status == "paused"
    assert not AuditLog.objects.filter(run=run, to_status="resuming").exists()

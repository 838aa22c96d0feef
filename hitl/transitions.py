"""Interrupt status changes (pending → decided / cancelled / expired, decided → applied /
cancelled): each goes through here, which writes its audit row, as ``run_transition``
does for runs. Callers hold the run's lock (taken first) and the row's."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from hitl.models import AgentInterrupt
from hitl.sql import applied_write
from observability import metrics
from runs.models import AgentRun, AuditLog
from runs.services import audit_row, audits_save
from runs.sql import Write, update_of

Pending = AgentInterrupt.Status.PENDING


def interrupt_transition(*, run: AgentRun, row: AgentInterrupt, to: str,
                         action: str = AuditLog.Action.INTERRUPT_STATUS, actor: Any = None,
                         surface: str = "", payload: Any = None, fields: Sequence[str] = (),
                         audits: list[AuditLog] | None = None, save: bool = True,
                         writes: list[Write] | None = None) -> None:
    """Move a locked interrupt to ``to`` (saving ``status`` and the ``fields`` the caller
    set) and record it. ``audits``: the transaction's list the audit row is added to,
    for the caller's one INSERT (else it is inserted here). ``save=False``: a row not
    yet inserted (its INSERT carries the status). ``writes``: the row's UPDATE goes there,
    for the caller's one statement (``runs.sql.writes_together``), instead of now."""
    before = row.status
    row.status = to
    if save and writes is not None:
        writes.append(update_of(row, ["status", *fields]))
    elif save:
        row.save(update_fields=["status", *fields])
    entry = audit_row(run=run, action=action, actor=actor, surface=surface,
                      interrupt_ref=row.interrupt_id, from_status=before, to_status=to,
                      payload=payload)
    metrics.interrupt_moved(agent=run.agent, kind=row.kind, before=before, to=to,
                            surface=surface, created_at=row.created_at,
                            decided_at=row.decided_at)
    if audits is None:
        audits_save([entry])
    else:
        audits.append(entry)


def interrupts_mark_applied(*, run: AgentRun, interrupt_ids: Sequence[str], now: datetime,
                            audits: list[AuditLog], writes: list[Write]) -> None:
    """decided → applied for the run's named, not yet applied, interrupts: one UPDATE (the
    end of every resumed segment, so no row is loaded) added to ``writes``, for the
    caller's one statement with the run's status change; their audit rows to ``audits``."""
    if not interrupt_ids:
        return
    writes.append(applied_write(run_id=run.pk, interrupt_ids=interrupt_ids, now=now))
    audits.extend(audit_row(run=run, action=AuditLog.Action.INTERRUPT_STATUS,
                            interrupt_ref=ref, from_status=AgentInterrupt.Status.DECIDED,
                            to_status=AgentInterrupt.Status.APPLIED)
                  for ref in interrupt_ids)

"""The decision service: every surface (REST, AG-UI, admin, pages) answers through here.

One transaction locks the run, then its interrupts (always in that order, so two
deciders cannot deadlock), checks permission, status, version and payload,
records the decision with an audit row, and enqueues the resume on commit.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from django.db import transaction
from django.utils import timezone

from agentsite.errors import Conflict, Gone, InvalidInput, NotFound
from hitl.kinds import InvalidResponse, validate_response
from hitl.models import AgentInterrupt
from runs import registry
from runs.models import AgentRun, AuditLog
from runs.publish import notify_user_on_commit
from runs.services import _enqueue_on_commit, audit, run_transition

DECIDE_PERMISSION = "hitl.decide_interrupt"


@dataclass(frozen=True)
class ResumeEntry:
    interrupt_id: str
    status: Literal["resolved", "cancelled"] = "resolved"
    payload: Any = None


def decidable_runs(actor: Any):
    """Runs whose interrupts ``actor`` may decide: own runs, or all with the permission."""
    if actor.has_perm(DECIDE_PERMISSION):
        return AgentRun.objects.all()
    return AgentRun.objects.filter(owner=actor)


def decidable_interrupts(actor: Any):
    if actor.has_perm(DECIDE_PERMISSION):
        return AgentInterrupt.objects.all()
    return AgentInterrupt.objects.filter(run__owner=actor)


def decision_submit(*, actor: Any, run_id: Any, interrupt_id: str, payload: Any,
                    status: Literal["resolved", "cancelled"] = "resolved") -> AgentRun:
    """Answer one interrupt of a run."""
    return decisions_submit(actor=actor, run_id=run_id,
                            entries=[ResumeEntry(interrupt_id=interrupt_id, status=status,
                                                 payload=payload)])


def decisions_submit(*, actor: Any, run_id: Any, entries: list[ResumeEntry]) -> AgentRun:
    """Answer one or several interrupts of a run at once; resume when none is left pending."""
    if not entries:
        raise InvalidInput("no decisions given", fields={"resume": ["must not be empty"]})
    ids = [e.interrupt_id for e in entries]
    if len(set(ids)) != len(ids):
        raise InvalidInput("an interrupt is named twice",
                           fields={"resume": ["duplicate interrupt_id"]})
    try:
        run_uuid = uuid.UUID(str(run_id))
    except ValueError:
        raise NotFound("run not found") from None

    expired: list[str] = []
    with transaction.atomic():
        run = AgentRun.objects.select_for_update().filter(pk=run_uuid).first()
        # Same rule as decidable_runs(); the owner is checked first because the permission
        # lookup costs two queries and most answers come from the run's owner.
        if run is None or (run.owner_id != actor.pk and not actor.has_perm(DECIDE_PERMISSION)):
            raise NotFound("run not found")
        rows = {row.interrupt_id: row for row in
                AgentInterrupt.objects.select_for_update().filter(run=run).order_by("id")}
        unknown = [i for i in ids if i not in rows]
        if unknown:
            raise NotFound(f"run has no interrupt {unknown[0]!r}", code="unknown_interrupt",
                           extra={"interrupt_ids": unknown})
        # Locked: of concurrent submitters only the first sees `pending`; the rest get 409.
        for entry in entries:
            row = rows[entry.interrupt_id]
            if row.status in (AgentInterrupt.Status.DECIDED, AgentInterrupt.Status.APPLIED):
                raise Conflict(f"interrupt {row.interrupt_id} was already decided",
                               code="already_decided")
            if row.status == AgentInterrupt.Status.EXPIRED:
                raise Gone(f"interrupt {row.interrupt_id} has expired")
            if row.status != AgentInterrupt.Status.PENDING:
                raise Conflict(f"interrupt {row.interrupt_id} is {row.status}, not pending",
                               code="not_pending")
        if run.status != AgentRun.Status.PAUSED:
            raise Conflict(f"run is {run.status}, not paused", code="run_not_paused")
        spec = registry.get(run.agent)
        if spec is None or not spec.accepts_version(run.agent_version):
            current = spec.version if spec else "none"
            raise Conflict(
                f"run started on {run.agent} version {run.agent_version}; the deployed version "
                f"is {current} and does not declare it compatible",
                code="version_mismatch")

        now = timezone.now()
        for entry in entries:
            row = rows[entry.interrupt_id]
            if row.expires_at and row.expires_at <= now:
                expired.append(row.interrupt_id)
        if expired:
            for interrupt_id in expired:
                row = rows[interrupt_id]
                row.status = AgentInterrupt.Status.EXPIRED
                row.save(update_fields=["status"])
                audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS, actor=actor,
                      interrupt_ref=interrupt_id, from_status="pending", to_status="expired")
        else:
            clean: dict[str, Any] = {}
            errors: dict[str, Any] = {}
            for entry in entries:
                if entry.status == "cancelled":
                    continue
                try:
                    clean[entry.interrupt_id] = validate_response(rows[entry.interrupt_id].request,
                                                                  entry.payload)
                except InvalidResponse as err:
                    errors[entry.interrupt_id] = (err, err.fields)
            if errors:
                if len(entries) == 1:
                    err, fields = next(iter(errors.values()))
                    raise InvalidInput(str(err), code="invalid_payload", fields=fields)
                raise InvalidInput("invalid payload", code="invalid_payload",
                                   fields={k: v[1] for k, v in errors.items()})
            for entry in entries:
                row = rows[entry.interrupt_id]
                row.status = (AgentInterrupt.Status.CANCELLED if entry.status == "cancelled"
                              else AgentInterrupt.Status.DECIDED)
                row.decision = clean.get(entry.interrupt_id)
                row.decided_by = actor
                row.decided_at = now
                row.save(update_fields=["status", "decision", "decided_by", "decided_at"])
                audit(run=run, action=AuditLog.Action.DECISION, actor=actor,
                      interrupt_ref=row.interrupt_id, from_status="pending",
                      to_status=row.status, payload=row.decision)
            still_pending = any(r.status == AgentInterrupt.Status.PENDING for r in rows.values())
            if not still_pending:
                run_transition(run=run, to=AgentRun.Status.RESUMING, actor=actor)
                _enqueue_on_commit(run)
        notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
    if expired:
        raise Gone(f"interrupt {expired[0]} has expired", extra={"interrupt_ids": expired})
    return run

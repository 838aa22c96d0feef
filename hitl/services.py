"""Interrupt writes: the decision service every surface answers through (REST, AG-UI,
chat pages, admin), and the interrupt rows the worker opens and applies.

A decision is one transaction: it locks the run, then its interrupts (always in that
order, so two deciders cannot deadlock), checks permission, status, version and
payload, records the decision with an audit row, and enqueues the resume on commit.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.db import transaction
from django.utils import timezone

from agentsite.errors import Conflict, Gone, InvalidInput, NotFound
from hitl.kinds import CANCELLED_RESUME, InvalidResponse, validate_response
from hitl.models import AgentInterrupt
from hitl.selectors import can_decide
from runs import registry
from runs.models import AgentRun, AuditLog
from runs.services import audit, run_enqueue_on_commit, run_transition
from streams.publish import notify_user_on_commit

Pending = AgentInterrupt.Status.PENDING


@dataclass(frozen=True)
class Answer:
    interrupt_id: str
    status: Literal["resolved", "cancelled"] = "resolved"
    payload: Any = None


def interrupt_decide(*, actor: Any, run_id: Any, interrupt_id: str, payload: Any,
                     status: Literal["resolved", "cancelled"] = "resolved",
                     surface: str = "api") -> AgentRun:
    """Answer one interrupt of a run."""
    return interrupts_decide(actor=actor, run_id=run_id, surface=surface, answers=[
        Answer(interrupt_id=interrupt_id, status=status, payload=payload)])


def interrupts_decide(*, actor: Any, run_id: Any, answers: list[Answer],
                      surface: str = "api") -> AgentRun:
    """Answer one or several interrupts of a run at once; resume when none is left pending."""
    ids = _check_answers(answers)
    run_uuid = _run_uuid(run_id)
    with transaction.atomic():
        run, rows = _lock(actor=actor, run_uuid=run_uuid, ids=ids)
        _check_decidable(run, [rows[i] for i in ids])
        expired = _expire_due(run, [rows[i] for i in ids], actor=actor, surface=surface)
        if not expired:
            clean = _validated(rows, answers)
            _record(run, rows, answers, clean, actor=actor, surface=surface)
        notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
    if expired:
        # Committed: the expiry stands, and the answer is refused.
        raise Gone(f"interrupt {expired[0]} has expired", extra={"interrupt_ids": expired})
    return run


def _check_answers(answers: list[Answer]) -> list[str]:
    if not answers:
        raise InvalidInput("no decisions given", fields={"resume": ["must not be empty"]})
    ids = [a.interrupt_id for a in answers]
    if len(set(ids)) != len(ids):
        raise InvalidInput("an interrupt is named twice",
                           fields={"resume": ["duplicate interrupt_id"]})
    return ids


def _run_uuid(run_id: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(run_id))
    except ValueError:
        raise NotFound("run not found") from None


def _lock(*, actor: Any, run_uuid: uuid.UUID,
          ids: list[str]) -> tuple[AgentRun, dict[str, AgentInterrupt]]:
    """Lock the run, then its interrupts; a run the actor may not decide is not found."""
    run = AgentRun.objects.select_for_update().filter(pk=run_uuid).first()
    if run is None or not can_decide(actor, run):
        raise NotFound("run not found")
    rows = {row.interrupt_id: row for row in
            AgentInterrupt.objects.select_for_update().filter(run=run).order_by("id")}
    unknown = [i for i in ids if i not in rows]
    if unknown:
        raise NotFound(f"run has no interrupt {unknown[0]!r}", code="unknown_interrupt",
                       extra={"interrupt_ids": unknown})
    return run, rows


def _check_decidable(run: AgentRun, named: list[AgentInterrupt]) -> None:
    # Locked: of concurrent submitters only the first sees `pending`; the rest get 409.
    for row in named:
        if row.status in (AgentInterrupt.Status.DECIDED, AgentInterrupt.Status.APPLIED):
            raise Conflict(f"interrupt {row.interrupt_id} was already decided",
                           code="already_decided")
        if row.status == AgentInterrupt.Status.EXPIRED:
            raise Gone(f"interrupt {row.interrupt_id} has expired")
        if row.status != Pending:
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


def _expire_due(run: AgentRun, named: list[AgentInterrupt], *, actor: Any,
                surface: str) -> list[str]:
    """Mark the named interrupts whose deadline has passed expired; return their ids."""
    now = timezone.now()
    expired = [row for row in named if row.expires_at and row.expires_at <= now]
    for row in expired:
        row.status = AgentInterrupt.Status.EXPIRED
        row.save(update_fields=["status"])
        audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS, actor=actor, surface=surface,
              interrupt_ref=row.interrupt_id, from_status=Pending, to_status=row.status)
    return [row.interrupt_id for row in expired]


def _validated(rows: dict[str, AgentInterrupt], answers: list[Answer]) -> dict[str, Any]:
    """Each resolved answer checked against the request it answers."""
    clean: dict[str, Any] = {}
    errors: dict[str, InvalidResponse] = {}
    for answer in answers:
        if answer.status == "cancelled":
            continue
        try:
            clean[answer.interrupt_id] = validate_response(rows[answer.interrupt_id].request,
                                                           answer.payload)
        except InvalidResponse as err:
            errors[answer.interrupt_id] = err
    if len(answers) == 1 and errors:
        err = next(iter(errors.values()))
        raise InvalidInput(str(err), code="invalid_payload", fields=err.fields)
    if errors:
        raise InvalidInput("invalid payload", code="invalid_payload",
                           fields={k: v.fields for k, v in errors.items()})
    return clean


def _record(run: AgentRun, rows: dict[str, AgentInterrupt], answers: list[Answer],
            clean: dict[str, Any], *, actor: Any, surface: str) -> None:
    """Store the decisions; when none of the run's interrupts is left pending, resume."""
    now = timezone.now()
    for answer in answers:
        row = rows[answer.interrupt_id]
        row.status = (AgentInterrupt.Status.CANCELLED if answer.status == "cancelled"
                      else AgentInterrupt.Status.DECIDED)
        row.decision = clean.get(answer.interrupt_id)
        row.decided_by = actor
        row.decided_at = now
        row.save(update_fields=["status", "decision", "decided_by", "decided_at"])
        audit(run=run, action=AuditLog.Action.DECISION, actor=actor, surface=surface,
              interrupt_ref=row.interrupt_id, from_status=Pending, to_status=row.status,
              payload=row.decision)
    if not any(r.status == Pending for r in rows.values()):
        run_transition(run=run, to=AgentRun.Status.RESUMING, actor=actor, surface=surface)
        run_enqueue_on_commit(run)


# --- the worker's side (called by execution.lifecycle, which holds the run's lock) -----

def interrupts_to_apply(run: AgentRun) -> list[AgentInterrupt]:
    """The run's answered interrupts not yet fed to the graph, locked."""
    return list(AgentInterrupt.objects.select_for_update()
                .filter(run=run, applied_at__isnull=True, decided_at__isnull=False,
                        status__in=[AgentInterrupt.Status.DECIDED,
                                    AgentInterrupt.Status.CANCELLED]))


def resume_value(answered: list[AgentInterrupt]) -> dict[str, Any]:
    """``Command(resume=...)`` for the answered interrupts.

    Always the map form ``{interrupt_id: value}``: LangGraph reads any dict whose keys
    look like interrupt ids (including ``{}``, the unlock answer) as such a map, so a
    bare payload would be ambiguous.
    """
    return {a.interrupt_id: (a.decision if a.status == AgentInterrupt.Status.DECIDED
                             else CANCELLED_RESUME) for a in answered}


def interrupts_apply(*, run: AgentRun, interrupt_ids: tuple[str, ...], now: datetime) -> None:
    """The segment that resumed with these answers ended: mark them applied."""
    for item in AgentInterrupt.objects.select_for_update().filter(
            run=run, interrupt_id__in=interrupt_ids, applied_at__isnull=True):
        item.applied_at = now
        fields = ["applied_at"]
        if item.status == AgentInterrupt.Status.DECIDED:
            item.status = AgentInterrupt.Status.APPLIED
            fields.append("status")
            audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS,
                  interrupt_ref=item.interrupt_id, from_status="decided", to_status="applied")
        item.save(update_fields=fields)


def interrupts_open(*, run: AgentRun,
                    requests: list[tuple[str, dict[str, Any]]]) -> list[AgentInterrupt]:
    """Store the graph's new questions ``[(interrupt id, request)]`` as pending rows."""
    known = dict(AgentInterrupt.objects.filter(
        run=run, interrupt_id__in=[i for i, _ in requests]).values_list("interrupt_id", "status"))
    rows = []
    for interrupt_id, request in requests:
        if interrupt_id in known:
            # An answered interrupt raised again means its answer never reached the graph.
            raise RuntimeError(f"interrupt {interrupt_id} was raised again after "
                               f"it was {known[interrupt_id]}")
        rows.append(AgentInterrupt.objects.create(
            run=run, interrupt_id=interrupt_id, kind=request.get("type", "unknown"),
            request=request, expires_at=request.get("expiresAt")))
    for row in rows:
        audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS, interrupt_ref=row.interrupt_id,
              to_status=row.status, payload=row.request)
    notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
    return rows


def interrupts_cancel_pending(*, run: AgentRun, actor: Any, surface: str = "") -> int:
    """Cancel the run's open questions (the run is being cancelled); return how many."""
    pending = list(AgentInterrupt.objects.select_for_update().filter(run=run, status=Pending))
    for item in pending:
        item.status = AgentInterrupt.Status.CANCELLED
        item.save(update_fields=["status"])
        audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS, actor=actor, surface=surface,
              interrupt_ref=item.interrupt_id, from_status=Pending, to_status=item.status)
    if pending:
        notify_user_on_commit(run.owner_id, {"type": "interrupts_changed",
                                             "run_id": str(run.id)})
    return len(pending)

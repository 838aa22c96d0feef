"""The decision rules behind the one answer entry point: surfaces (REST, AG-UI, the
LangGraph API, chat pages, admin) call ``execution.lifecycle.interrupts_answer``, which
decides through ``interrupts_decide`` here and cancels the run when a question without
a decline is cancelled (this layer cannot: cancelling stops the worker's segment).

A decision is one transaction: it locks the run, then its interrupts (always in that
order, so two deciders cannot deadlock), checks permission, status, version and
payload, records the decision with an audit row, and enqueues the resume on commit.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.utils import timezone

from agentsite.errors import Conflict, Gone, InvalidInput, NotFound
from agentsite.request_transaction import service_atomic
from hitl import policies
from hitl.formats import CANCELS_RUN, InvalidAnswer
from hitl.models import AgentInterrupt, InterruptVote
from hitl.selectors import can_decide
from hitl.sql import DECIDING
from hitl.transitions import Pending, interrupt_transition
from observability import tracing
from runs import registry
from runs.models import AgentRun, AuditLog
from runs.services import audit, run_resume
from runs.sql import Write, run_lock, usage_related, writes_together
from streams.publish import notify_user_on_commit


class CancelsRun(Conflict):
    """A cancelled answer to a question whose format has no decline (``CANCELS_RUN``),
    given no ``cancel_run``: nothing was recorded."""

    code = "cancels_run"


@dataclass(frozen=True)
class Answer:
    interrupt_id: str
    status: Literal["resolved", "cancelled"] = "resolved"
    payload: Any = None


def interrupts_decide(*, actor: Any, run_id: Any, answers: list[Answer],
                      surface: str = "api",
                      cancel_run: Callable[[AgentRun], Any] | None = None) -> AgentRun:
    """Answer one or several interrupts of a run at once; resume when none is left pending.
    Returns the run as committed, with its interrupts as ``interrupt_rows``
    (``_as_decided``).

    ``cancel_run``: what a cancelled answer to a question with no decline does instead
    (``CANCELS_RUN``; ``execution.lifecycle.interrupts_answer`` cancels the run), called
    with the locked run after every check and before any write, in this transaction;
    without it such an answer is refused (``CancelsRun``)."""
    ids = _check_answers(answers)
    run_uuid = _run_uuid(run_id)
    tracing.request_attributes(run_id=run_uuid, user_id=getattr(actor, "pk", None),
                               interrupt_ids=ids)
    # Joins the request's transaction when a door opened one (agentsite.request_transaction).
    with service_atomic():
        run, rows = _lock(actor=actor, run_uuid=run_uuid, ids=ids)
        _check_decidable(run, [rows[i] for i in ids])
        _check_policy(actor, run, [rows[i] for i in ids])
        expired = _expire_due(run, [rows[i] for i in ids], actor=actor, surface=surface)
        ending = None if expired else _cancels_run(rows, answers)
        if ending is not None:
            if cancel_run is None:
                raise CancelsRun(f"interrupt {ending} cannot be declined: cancelling it "
                                 "cancels the run", extra={"interrupt_ids": [ending]})
            # Under the lock taken above: no one else's answer lands before the cancel.
            cancel_run(run)
            return run
        if not expired:
            clean = _validated(rows, answers)
            _check_votes(actor, rows, answers, clean)
            _record(run, rows, answers, clean, actor=actor, surface=surface)
        notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
    if expired:
        # Committed: the expiry stands, and the answer is refused.
        raise Gone(f"interrupt {expired[0]} has expired", extra={"interrupt_ids": expired})
    return _as_decided(run, list(rows.values()), actor)


def _as_decided(run: AgentRun, rows: list[AgentInterrupt], actor: Any) -> AgentRun:
    """The run as this decision committed it, with its interrupts (all of them, locked
    and updated here) as ``run.interrupt_rows``, the attribute a
    ``Prefetch("interrupts", to_attr="interrupt_rows")`` sets: what a caller shows of it
    (the API's 202) needs no query, and no re-read races the segment that has just
    started."""
    run.interrupt_rows = sorted(rows, key=lambda r: (r.created_at, r.pk))  # Meta.ordering
    if getattr(actor, "pk", None) == run.owner_id:
        run.owner = actor
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
    """Lock the run, then its interrupts (always in that order: two deciders cannot
    deadlock); a run the actor may not decide is not found (its row is unlocked with the
    rollback)."""
    # Locked: a concurrent decision, claim or cancel of this run waits for our commit.
    # Its interrupts are locked after it in the same statement (``hitl.sql.DECIDING``,
    # with their assignment as id arrays: no user rows loaded to compare ids), and the
    # run's usage rows read for what a surface shows of the run (``runs.sql``).
    run = run_lock(run_uuid, related=(DECIDING, usage_related()))
    if run is None or not can_decide(actor, run):
        raise NotFound("run not found")
    rows = {row.interrupt_id: row for row in run.interrupts_locked}
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


def _check_policy(actor: Any, run: AgentRun, named: list[AgentInterrupt]) -> None:
    """Assignment and four-eyes (``hitl.policies.refusal``): 403 for the first refused."""
    for row in named:
        refused = policies.refusal(actor, row, run)
        if refused is not None:
            raise refused


def _cancels_run(rows: dict[str, AgentInterrupt], answers: list[Answer]) -> str | None:
    """The first cancelled answer to a question with no decline: the graph would refuse
    its resume value (the run would fail), so the run is cancelled instead."""
    for answer in answers:
        if answer.status == "cancelled" and \
                rows[answer.interrupt_id].format.cancelled_value() is CANCELS_RUN:
            return answer.interrupt_id
    return None


def _check_votes(actor: Any, rows: dict[str, AgentInterrupt], answers: list[Answer],
                 clean: dict[str, Any]) -> None:
    # Before any write: a second vote by one user, or a vote that is not approve / reject.
    for answer in answers:
        row = rows[answer.interrupt_id]
        if answer.status == "resolved" and row.required_approvals > 1:
            policies.vote_of(row.format, clean[answer.interrupt_id])
            if row.votes.filter(user=actor).exists():
                raise Conflict(f"you already voted on interrupt {row.interrupt_id}",
                               code="already_voted")


def _expire_due(run: AgentRun, named: list[AgentInterrupt], *, actor: Any,
                surface: str) -> list[str]:
    """Mark the named interrupts whose deadline has passed expired; return their ids.

    One with a default answer stays pending: the deadline sweep answers it with the
    default (``interrupts_expire_due``); the late answer is refused all the same.
    """
    now = timezone.now()
    due = [row for row in named if row.expires_at and row.expires_at <= now]
    expired = [row for row in due if row.default_answer is None]
    for row in expired:
        interrupt_transition(run=run, row=row, to=AgentInterrupt.Status.EXPIRED, actor=actor,
                             surface=surface)
    return [row.interrupt_id for row in due]


def _validated(rows: dict[str, AgentInterrupt], answers: list[Answer]) -> dict[str, Any]:
    """Each resolved answer checked by its interrupt's format."""
    clean: dict[str, Any] = {}
    errors: dict[str, InvalidAnswer] = {}
    for answer in answers:
        if answer.status == "cancelled":
            continue
        try:
            clean[answer.interrupt_id] = rows[answer.interrupt_id].format.validate(
                answer.payload)
        except InvalidAnswer as err:
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
    audits: list[AuditLog] = []
    writes: list[Write] = []  # the decided rows' UPDATEs, sent with the audit rows
    for answer in answers:
        row = rows[answer.interrupt_id]
        if answer.status == "resolved" and row.required_approvals > 1:
            _vote(run, row, clean[answer.interrupt_id], actor=actor, surface=surface, now=now)
            continue
        row.decision = clean.get(answer.interrupt_id)
        row.decided_by = actor
        row.decided_at = now
        interrupt_transition(
            run=run, row=row, action=AuditLog.Action.DECISION, actor=actor, surface=surface,
            to=(AgentInterrupt.Status.CANCELLED if answer.status == "cancelled"
                else AgentInterrupt.Status.DECIDED),
            payload=row.decision, fields=("decision", "decided_by", "decided_at"),
            audits=audits, writes=writes)
    # One statement: the decisions, their audit rows (and the run's resume).
    if not any(r.status == Pending for r in rows.values()):
        run_resume(run=run, actor=actor, surface=surface, audits=audits, also=writes)
    else:
        writes_together(writes=writes, audits=audits)


def _vote(run: AgentRun, row: AgentInterrupt, payload: Any, *, actor: Any,
          surface: str, now: datetime) -> None:
    """Record one quorum vote; when the votes settle it, decide the interrupt with the
    format's quorum answer (ours: ``{approved, votes}``). Under the run's lock:
    concurrent voters count one by one."""
    approved, reason = policies.vote_of(row.format, payload)
    InterruptVote.objects.create(interrupt=row, user=actor, username=actor.get_username(),
                                 approved=approved, reason=reason, payload=payload,
                                 surface=surface)
    votes = list(row.votes.order_by("id"))
    audit(run=run, action=AuditLog.Action.DECISION, actor=actor, surface=surface,
          interrupt_ref=row.interrupt_id, from_status=Pending, to_status=Pending,
          payload={"vote": payload, "approvals": sum(1 for v in votes if v.approved),
                   "required": row.required_approvals})
    outcome = policies.settled(row, votes)
    if outcome is None:
        return
    row.decision, row.decided_by, row.decided_at = outcome, actor, now
    interrupt_transition(run=run, row=row, to=AgentInterrupt.Status.DECIDED,
                         action=AuditLog.Action.DECISION, actor=actor, surface=surface,
                         payload=outcome, fields=("decision", "decided_by", "decided_at"))


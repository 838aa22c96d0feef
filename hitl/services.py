"""Interrupt writes: the decision service every surface answers through (REST, AG-UI,
chat pages, admin), and the interrupt rows the worker opens and applies.

A decision is one transaction: it locks the run, then its interrupts (always in that
order, so two deciders cannot deadlock), checks permission, status, version and
payload, records the decision with an audit row, and enqueues the resume on commit.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.utils import timezone

from agentsite.errors import Conflict, Forbidden, Gone, InvalidInput, NotFound
from hitl import notify, policies
from hitl.formats import InvalidAnswer, recognise
from hitl.models import AgentInterrupt, InterruptVote, StandingApproval
from hitl.selectors import ASSIGNMENT_IDS, can_decide, is_reviewer
from runs import registry
from runs.models import AgentRun, AuditLog
from runs.services import (
    audit,
    audit_row,
    audits_save,
    run_enqueue_on_commit,
    run_locked,
    run_resume,
    run_transition,
)
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
    """Answer one or several interrupts of a run at once; resume when none is left pending.
    Returns the run as committed, with its interrupts as ``interrupt_rows``
    (``_as_decided``)."""
    ids = _check_answers(answers)
    run_uuid = _run_uuid(run_id)
    with transaction.atomic():
        run, rows = _lock(actor=actor, run_uuid=run_uuid, ids=ids)
        _check_decidable(run, [rows[i] for i in ids])
        _check_policy(actor, run, [rows[i] for i in ids])
        expired = _expire_due(run, [rows[i] for i in ids], actor=actor, surface=surface)
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
    run = run_locked(run_uuid)
    if run is None or not can_decide(actor, run):
        raise NotFound("run not found")
    # Locked too (only this table's rows: ``of``), with assignment as id arrays
    # (``hitl.policies.assignment``): no user rows loaded to compare ids.
    interrupts = (AgentInterrupt.objects.select_for_update(of=("self",))
                  .filter(run_id=run_uuid).order_by("id").annotate(**ASSIGNMENT_IDS))
    rows = {row.interrupt_id: row for row in interrupts}
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
        row.status = AgentInterrupt.Status.EXPIRED
        row.save(update_fields=["status"])
        audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS, actor=actor, surface=surface,
              interrupt_ref=row.interrupt_id, from_status=Pending, to_status=row.status)
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
    audits = []
    for answer in answers:
        row = rows[answer.interrupt_id]
        if answer.status == "resolved" and row.required_approvals > 1:
            _vote(run, row, clean[answer.interrupt_id], actor=actor, surface=surface, now=now)
            continue
        row.status = (AgentInterrupt.Status.CANCELLED if answer.status == "cancelled"
                      else AgentInterrupt.Status.DECIDED)
        row.decision = clean.get(answer.interrupt_id)
        row.decided_by = actor
        row.decided_at = now
        row.save(update_fields=["status", "decision", "decided_by", "decided_at"])
        audits.append(audit_row(run=run, action=AuditLog.Action.DECISION, actor=actor,
                                surface=surface, interrupt_ref=row.interrupt_id,
                                from_status=Pending, to_status=row.status,
                                payload=row.decision))
    if not any(r.status == Pending for r in rows.values()):
        run_resume(run=run, actor=actor, surface=surface, audits=audits)
    else:
        audits_save(audits)


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
    row.status = AgentInterrupt.Status.DECIDED
    row.decision, row.decided_by, row.decided_at = outcome, actor, now
    row.save(update_fields=["status", "decision", "decided_by", "decided_at"])
    audit(run=run, action=AuditLog.Action.DECISION, actor=actor, surface=surface,
          interrupt_ref=row.interrupt_id, from_status=Pending, to_status=row.status,
          payload=outcome)


# --- assignment from the admin: assign, claim, release ----------------------------------

def interrupt_assign(*, actor: Any, interrupt_pk: Any,
                     action: Literal["assign", "claim", "release"],
                     users: list[str] | tuple = (), groups: list[str] | tuple = (),
                     surface: str = "admin") -> AgentInterrupt:
    """Change who may decide a pending interrupt; a reviewer only.

    assign: add users / groups; claim: the actor becomes the only assignee (a user
    already assigned or in an assigned group, or one with ``hitl.override_assignment``,
    or anyone while nobody is assigned); release: remove the actor from the assignees.
    """
    if not is_reviewer(actor):
        raise NotFound("interrupt not found")
    run_id = AgentInterrupt.objects.filter(pk=interrupt_pk).values_list("run_id", flat=True).first()
    if run_id is None:
        raise NotFound("interrupt not found")
    with transaction.atomic():
        run = AgentRun.objects.select_for_update().get(pk=run_id)
        row = (AgentInterrupt.objects.select_for_update().prefetch_related(
            "assignees", "assigned_groups").get(pk=interrupt_pk))
        # Locked: a decision racing with us finds the row as we leave it, or vice versa.
        if row.status != Pending:
            raise Conflict(f"interrupt {row.interrupt_id} is {row.status}, not pending",
                           code="not_pending")
        before = policies.assigned_names(row)
        if action == "assign":
            found_users, found_groups = _resolve(users, groups)
            row.assignees.add(*found_users)
            row.assigned_groups.add(*found_groups)
        elif action == "claim":
            if policies.has_assignees(row) and not policies.is_assigned(actor, row) \
                    and not actor.has_perm(policies.OVERRIDE_PERMISSION):
                raise Forbidden(f"interrupt {row.interrupt_id} is assigned to someone else",
                                code="not_assigned")
            row.assignees.set([actor])
            row.assigned_groups.clear()
        elif action == "release":
            row.assignees.remove(actor)
        else:
            raise InvalidInput(f"unknown action {action!r}")
        row = AgentInterrupt.objects.prefetch_related("assignees", "assigned_groups").get(
            pk=row.pk)
        after = policies.assigned_names(row)
        audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS, actor=actor, surface=surface,
              interrupt_ref=row.interrupt_id, from_status=Pending, to_status=Pending,
              payload={action: {"users": list(users), "groups": list(groups)},
                       "assignees_before": {"users": before[0], "groups": before[1]},
                       "assignees": {"users": after[0], "groups": after[1]}})
        notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
    return row


def _resolve(users: Any, groups: Any) -> tuple[list[Any], list[Group]]:
    """Users and groups by name; an unknown name is an error naming it."""
    users, groups = list(users or []), list(groups or [])
    found_users = list(get_user_model().objects.filter(username__in=users))
    found_groups = list(Group.objects.filter(name__in=groups))
    missing = sorted(set(users) - {u.get_username() for u in found_users})
    missing_groups = sorted(set(groups) - {g.name for g in found_groups})
    if missing or missing_groups:
        fields = {**({"users": [f"no such user: {', '.join(missing)}"]} if missing else {}),
                  **({"groups": [f"no such group: {', '.join(missing_groups)}"]}
                     if missing_groups else {})}
        raise InvalidInput("unknown assignee", code="unknown_assignee", fields=fields)
    return found_users, found_groups


# --- deadlines and escalation (called by the sweep in execution.deadlines) --------------

def interrupts_expire_due(*, run: AgentRun, now: datetime) -> list[AgentInterrupt]:
    """Past their deadline: answer with the default where there is one (actor "timeout"),
    else mark expired. Caller holds the run's lock and has checked it is paused.

    Returns the run's expired interrupts (the run ends ``expired`` when there is one);
    when none is expired and none is left pending, the run is moved to resuming here.
    """
    rows = list(AgentInterrupt.objects.select_for_update().filter(run=run).order_by("id"))
    for row in rows:
        if row.status != Pending or row.expires_at is None or row.expires_at > now:
            continue
        if row.default_answer is not None:
            row.status = AgentInterrupt.Status.DECIDED
            row.decision, row.decided_at = row.default_answer, now
            row.save(update_fields=["status", "decision", "decided_at"])
            audit(run=run, action=AuditLog.Action.DECISION, actor=policies.TIMEOUT_ACTOR,
                  interrupt_ref=row.interrupt_id, from_status=Pending, to_status=row.status,
                  payload={"default": row.decision})
        else:
            row.status = AgentInterrupt.Status.EXPIRED
            row.save(update_fields=["status"])
            audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS,
                  actor=policies.TIMEOUT_ACTOR, interrupt_ref=row.interrupt_id,
                  from_status=Pending, to_status=row.status)
    expired = [r for r in rows if r.status == AgentInterrupt.Status.EXPIRED]
    if not expired and not any(r.status == Pending for r in rows) and any(
            r.status == AgentInterrupt.Status.DECIDED and r.applied_at is None for r in rows):
        run_transition(run=run, to=AgentRun.Status.RESUMING, actor=policies.TIMEOUT_ACTOR)
        run_enqueue_on_commit(run)
    notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
    return expired


def interrupt_escalate(*, interrupt_pk: Any, now: datetime) -> bool:
    """Add the escalation groups as assignees of a pending interrupt whose escalation
    time passed, and notify them; False when there was nothing to do."""
    run_id = AgentInterrupt.objects.filter(pk=interrupt_pk).values_list("run_id", flat=True).first()
    if run_id is None:
        return False
    with transaction.atomic():
        run = AgentRun.objects.select_for_update().get(pk=run_id)
        row = AgentInterrupt.objects.select_for_update().get(pk=interrupt_pk)
        # Locked: of two sweeps only the first finds it not yet escalated.
        if row.status != Pending or row.escalated_at is not None or row.escalate_at is None \
                or row.escalate_at > now:
            return False
        groups = list(Group.objects.filter(name__in=row.escalate_to))
        row.assigned_groups.add(*groups)
        row.escalated_at = now
        row.save(update_fields=["escalated_at"])
        audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS, actor=policies.TIMEOUT_ACTOR,
              interrupt_ref=row.interrupt_id, from_status=Pending, to_status=Pending,
              payload={"escalated_to": [g.name for g in groups]})
        notify.on_commit("interrupt.escalated", run=run, interrupt=row,
                         groups=[g.name for g in groups])
        notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
    return True


def run_resume_if_answered(*, run: AgentRun, rows: list[AgentInterrupt]) -> bool:
    """Resume a run just paused whose new questions were all answered at once (standing
    approvals). Caller (``run_pause``) holds the run's lock and has registered the pause's
    events first: on-commit callbacks run in order, so the resume is enqueued after them."""
    if not rows or any(r.status == Pending for r in rows):
        return False
    run_transition(run=run, to=AgentRun.Status.RESUMING)
    run_enqueue_on_commit(run)
    return True


# --- the worker's side (called by execution.lifecycle, which holds the run's lock) -----

ANSWERED = (AgentInterrupt.Status.DECIDED, AgentInterrupt.Status.CANCELLED)


def interrupts_to_apply(run: AgentRun) -> list[AgentInterrupt]:
    """The run's answered interrupts not yet fed to the graph, locked (the caller holds
    the run's lock, taken first)."""
    return list(AgentInterrupt.objects.select_for_update().filter(
        run=run, applied_at__isnull=True, decided_at__isnull=False,
        status__in=ANSWERED).order_by("id"))


def resume_value(answered: list[AgentInterrupt]) -> dict[str, Any]:
    """``Command(resume=...)`` for the answered interrupts.

    Always the map form ``{interrupt_id: value}``: LangGraph reads any dict whose keys
    look like interrupt ids (including ``{}``, the unlock answer) as such a map, so a
    bare payload would be ambiguous. Each value is what its format says the graph
    expects for the stored answer (or for a cancel).
    """
    return {a.interrupt_id: (a.format.resume_value(a.decision)
                             if a.status == AgentInterrupt.Status.DECIDED
                             else a.format.cancelled_value()) for a in answered}


def interrupts_apply(*, run: AgentRun, interrupt_ids: tuple[str, ...],
                     decided_ids: tuple[str, ...], now: datetime,
                     audits: list[AuditLog]) -> None:
    """The segment that resumed with these answers ended: mark them applied (their audit
    rows go to ``audits``, for the caller's one INSERT). ``decided_ids``: those of them
    answered, not cancelled, as the claim read them. Caller holds the run's lock, under
    which only this segment's end changes them."""
    if not interrupt_ids:
        return
    decided = list(decided_ids)
    unapplied = AgentInterrupt.objects.filter(run=run, applied_at__isnull=True)
    if decided:
        unapplied.filter(interrupt_id__in=decided, status=AgentInterrupt.Status.DECIDED) \
            .update(status=AgentInterrupt.Status.APPLIED, applied_at=now)
    cancelled = [i for i in interrupt_ids if i not in decided_ids]
    if cancelled:  # cancelled answers: applied, status kept
        unapplied.filter(interrupt_id__in=cancelled).update(applied_at=now)
    audits.extend(audit_row(run=run, action=AuditLog.Action.INTERRUPT_STATUS,
                            interrupt_ref=ref, from_status="decided", to_status="applied")
                  for ref in decided)


def interrupts_open(*, run: AgentRun, requests: list[tuple[Any, ...]],
                    audits: list[AuditLog] | None = None) -> list[AgentInterrupt]:
    """Store the graph's new questions ``[(interrupt id, value[, response_schema])]`` as
    pending rows: the raw value verbatim, its format (recognised once, here) and schema,
    with their policy (the request's over the agent's); standing approvals answer
    matching ones at once. Caller (``execution.lifecycle.run_pause``) holds the run's lock; given
    ``audits``, it inserts the audit rows added there (else they are inserted here)."""
    own_audits = audits is None
    audits = [] if audits is None else audits
    spec = registry.get(run.agent)
    now = timezone.now()
    rows, rules = [], []
    for interrupt_id, value, *more in requests:
        schema = more[0] if more and isinstance(more[0], dict) else None
        fmt = recognise(value, schema)
        rule = policies.effective(fmt, spec.policy if spec else None, now)
        rows.append(AgentInterrupt(
            run=run, interrupt_id=interrupt_id, kind=fmt.name, request=value,
            response_schema=schema, expires_at=fmt.expires_at() or rule.expires_at,
            requester_may_decide=rule.requester_may_decide,
            required_approvals=rule.required_approvals, reject_policy=rule.reject_policy,
            default_answer=rule.default, escalate_at=rule.escalate_at,
            escalate_to=list(rule.escalate_to)))
        rules.append(rule)
    audits.extend(audit_row(run=run, action=AuditLog.Action.INTERRUPT_STATUS,
                            interrupt_ref=row.interrupt_id, to_status=Pending,
                            payload=row.request) for row in rows)
    # Before the INSERT: a question a standing approval answers goes in answered.
    _standing_approvals(run, rows, now, audits)
    # One INSERT (``raised_again_refused`` names the error if a row exists already).
    AgentInterrupt.objects.bulk_create(rows)
    assigned = set()
    for row, rule in zip(rows, rules, strict=True):
        if rule.assignees or rule.groups:
            assigned.add(row.pk)
        if rule.assignees or rule.groups or rule.escalate_to:
            try:
                users, groups = _resolve(rule.assignees, rule.groups)
                _resolve((), rule.escalate_to)
            except InvalidInput as err:
                # A policy naming nobody would leave the question open to anyone: fail loud.
                raise RuntimeError(f"interrupt {row.interrupt_id}: {err.fields}") from None
            row.assignees.add(*users)
            row.assigned_groups.add(*groups)
    if own_audits:
        audits_save(audits)
    # An unassigned question goes to the requester (by email) and the agent's webhooks: a
    # notify task only if there is one of them (it would find nobody to tell otherwise).
    reaches_requester: bool | None = None
    for row in rows:
        if row.status != Pending:
            continue
        if row.pk not in assigned:
            if reaches_requester is None:
                reaches_requester = notify.anyone_for(run)
            if not reaches_requester:
                continue
        notify.on_commit("interrupt.created", run=run, interrupt=row)
    notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
    return rows


@contextmanager
def raised_again_refused() -> Iterator[None]:
    """Around a transaction that opens interrupts (``interrupts_open``): an answered
    interrupt raised again means its answer never reached the graph; say so."""
    try:
        yield
    except IntegrityError as err:
        if getattr(getattr(err.__cause__, "diag", None), "constraint_name",
                   None) != "one_row_per_interrupt":
            raise
        raise RuntimeError(f"an interrupt was raised again after it was answered: "
                           f"{err.__cause__}") from None


def _standing_approvals(run: AgentRun, rows: list[AgentInterrupt], now: datetime,
                        audits: list[AuditLog]) -> int:
    """Answer the new rows (not yet saved) an active standing approval matches; return
    how many."""
    candidates = [r for r in rows if r.format.subjects()]
    if not candidates:
        return 0
    # In the order they apply; the grantor comes along (a match names it).
    rules = list(StandingApproval.objects.filter(agent=run.agent, revoked_at__isnull=True)
                 .select_related("granted_by").order_by("created_at", "id"))
    done = 0
    for row in candidates:
        rule = next((r for r in rules if policies.standing_matches(
            r, agent=run.agent, request=row.format, now=now)), None)
        if rule is None:
            continue
        row.status = AgentInterrupt.Status.DECIDED
        row.decision = policies.standing_answer(row.format, rule, row.required_approvals)
        row.decided_by, row.decided_at = rule.granted_by, now
        grantor = rule.granted_by.get_username() if rule.granted_by else ""
        audits.append(audit_row(run=run, action=AuditLog.Action.DECISION, actor=rule.granted_by,
                                surface="standing_approval", interrupt_ref=row.interrupt_id,
                                from_status=Pending, to_status=row.status,
                                payload={"answer": row.decision, "standing_approval": rule.pk,
                                         "grantor": grantor}))
        done += 1
    return done


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


def interrupts_close_decided(*, run: AgentRun, actor: Any, surface: str = "") -> int:
    """Close the run's answers no segment will apply (the run is ending: cancelled or
    failed) as cancelled, keeping the decision; return how many."""
    decided = list(AgentInterrupt.objects.select_for_update().filter(
        run=run, status=AgentInterrupt.Status.DECIDED, applied_at__isnull=True))
    for item in decided:
        item.status = AgentInterrupt.Status.CANCELLED
        item.save(update_fields=["status"])
        audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS, actor=actor, surface=surface,
              interrupt_ref=item.interrupt_id, from_status=AgentInterrupt.Status.DECIDED,
              to_status=item.status)
    return len(decided)

"""The interrupt rows over a run's life, as the worker and the run's end change them
(``execution.lifecycle`` and the deadline sweep, which hold the run's lock): open the
graph's questions (standing approvals answer some at once), the answers to feed it and
the ``Command(resume=...)`` value, mark them applied, close them when the run ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from agentsite.errors import InvalidInput
from hitl import notify, policies
from hitl.assign import resolve_names
from hitl.formats import CANCELS_RUN, recognise
from hitl.models import AgentInterrupt, StandingApproval
from hitl.sql import STANDING, UNAPPLIED
from hitl.transitions import Pending, interrupt_transition, interrupts_mark_applied
from observability import metrics
from runs import registry
from runs.models import AgentRun, AuditLog
from runs.services import (
    audit_row,
    audits_save,
    run_enqueue_on_commit,
    run_transition,
)
from runs.sql import Write, insert_of, writes_together
from streams.publish import notify_user_on_commit


def run_resume_if_answered(*, run: AgentRun, rows: list[AgentInterrupt]) -> bool:
    """Resume a run just paused whose new questions were all answered at once (standing
    approvals). Caller (``run_pause``) holds the run's lock and has registered the pause's
    events first: on-commit callbacks run in order, so the resume is enqueued after them."""
    if not rows or any(r.status == Pending for r in rows):
        return False
    run_transition(run=run, to=AgentRun.Status.RESUMING)
    run_enqueue_on_commit(run)
    return True


ANSWERED = (AgentInterrupt.Status.DECIDED, AgentInterrupt.Status.CANCELLED)


def interrupts_to_apply(run: AgentRun) -> list[AgentInterrupt]:
    """The run's answered interrupts not yet fed to the graph, locked (the caller holds
    the run's lock, taken first; read with it when locked with ``hitl.sql.UNAPPLIED``)."""
    unapplied = getattr(run, UNAPPLIED.attr, None)
    if unapplied is not None:
        return [row for row in unapplied
                if row.decided_at is not None and row.status in ANSWERED]
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
                             else _cancelled(a)) for a in answered}


def _cancelled(row: AgentInterrupt) -> Any:
    # A cancel recorded before its format said it cancels the run (``hitl.decide``
    # refuses to record one now): None, as such a cancel always resumed.
    value = row.format.cancelled_value()
    return None if value is CANCELS_RUN else value


def interrupts_apply(*, run: AgentRun, interrupt_ids: tuple[str, ...],
                     decided_ids: tuple[str, ...], now: datetime,
                     audits: list[AuditLog], writes: list[Write]) -> None:
    """The segment that resumed with these answers ended: mark them applied (their audit
    rows go to ``audits``, their UPDATE to ``writes``, for the caller's one statement).
    ``decided_ids``: those of them answered, not cancelled, as the claim read them. Caller
    holds the run's lock, under which only this segment's end changes them."""
    if not interrupt_ids:
        return
    interrupts_mark_applied(run=run, interrupt_ids=decided_ids, now=now, audits=audits,
                            writes=writes)
    cancelled = [i for i in interrupt_ids if i not in decided_ids]
    if cancelled:  # cancelled answers: applied, status kept (no transition)
        AgentInterrupt.objects.filter(run=run, applied_at__isnull=True,
                                      interrupt_id__in=cancelled).update(applied_at=now)


def interrupts_open(*, run: AgentRun, requests: list[tuple[Any, ...]],
                    audits: list[AuditLog] | None = None,
                    writes: list[Write] | None = None) -> list[AgentInterrupt]:
    """Store the graph's new questions ``[(interrupt id, value[, response_schema[,
    args_schemas]])]`` as pending rows: the raw value verbatim, its format (recognised
    once, here), its schema and its tools' argument schemas,
    with their policy (the request's over the agent's); standing approvals answer
    matching ones at once. Caller (``execution.lifecycle.run_pause``) holds the run's lock; given
    ``audits``, it inserts the audit rows added there (else they are inserted here); given
    ``writes``, the rows' INSERT goes there, for the caller's one statement with the run's
    status change (unless a policy assigns them: their assignments need the rows)."""
    own_audits = audits is None
    audits = [] if audits is None else audits
    spec = registry.get(run.agent)
    now = timezone.now()
    opened = [_pending_row(run, request, spec.policy if spec else None, now)
              for request in requests]
    rows = [row for row, _ in opened]
    audits.extend(audit_row(run=run, action=AuditLog.Action.INTERRUPT_STATUS,
                            interrupt_ref=row.interrupt_id, to_status=Pending,
                            payload=row.request) for row in rows)
    # Before the INSERT: a question a standing approval answers goes in answered.
    _standing_approvals(run, rows, now, audits)
    # One INSERT (``raised_again_refused`` names the error if a row exists already); in the
    # caller's statement when nothing below needs the rows in the table first (their
    # notification's foreign key is checked at commit).
    if writes is not None and not any(rule.assignees or rule.groups for _, rule in opened):
        writes.append(insert_of(rows))
    else:
        AgentInterrupt.objects.bulk_create(rows)
    metrics.interrupts_opened(agent=run.agent, kinds=[row.kind for row in rows])
    assigned = set()
    for row, rule in opened:
        if _assign(row, rule):  # saved rows only: the assignments are relations
            assigned.add(row.pk)
    if own_audits:
        audits_save(audits)
    _notify_opened(run, rows, assigned, writes)
    notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
    return rows


def _pending_row(run: AgentRun, request: tuple[Any, ...], agent_policy: Any,
                 now: Any) -> tuple[AgentInterrupt, Any]:
    """One question as an unsaved pending row, with the policy rule that shaped it."""
    interrupt_id, value, *more = request
    schema = more[0] if more and isinstance(more[0], dict) else None
    tools = more[1] if len(more) > 1 and isinstance(more[1], dict) else None
    fmt = recognise(value, schema, tools)
    rule = policies.effective(fmt, agent_policy, now)
    row = AgentInterrupt(
        run=run, interrupt_id=interrupt_id, kind=fmt.name, request=value,
        response_schema=schema, args_schemas=tools,
        expires_at=fmt.expires_at() or rule.expires_at,
        requester_may_decide=rule.requester_may_decide,
        required_approvals=rule.required_approvals, reject_policy=rule.reject_policy,
        default_answer=rule.default, escalate_at=rule.escalate_at,
        escalate_to=list(rule.escalate_to))
    return row, rule


def _assign(row: AgentInterrupt, rule: Any) -> bool:
    """Give a saved row the users and groups its rule names; whether it names any."""
    if not (rule.assignees or rule.groups or rule.escalate_to):
        return False
    try:
        users, groups = resolve_names(rule.assignees, rule.groups)
        resolve_names((), rule.escalate_to)
    except InvalidInput as err:
        # A policy naming nobody would leave the question open to anyone: fail loud.
        raise RuntimeError(f"interrupt {row.interrupt_id}: {err.fields}") from None
    row.assignees.add(*users)
    row.assigned_groups.add(*groups)
    return bool(rule.assignees or rule.groups)


def _notify_opened(run: AgentRun, rows: list[AgentInterrupt], assigned: set[Any],
                   writes: list[Write] | None) -> None:
    """An unassigned question goes to the requester (by email) and the agent's webhooks: a
    notify task only if there is one of them (it would find nobody to tell otherwise).
    Given ``writes``, the outbox rows join the caller's one statement."""
    reaches_requester: bool | None = None
    for row in rows:
        if row.status != Pending:
            continue
        if row.pk not in assigned:
            if reaches_requester is None:
                reaches_requester = notify.anyone_for(run)
            if not reaches_requester:
                continue
        notify.on_commit("interrupt.created", run=run, interrupt=row, writes=writes)


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
    # In the order they apply; the grantor comes along (a match names it). A pause read
    # them with the run's lock (``hitl.sql.STANDING``).
    rules = getattr(run, STANDING.attr, None)
    if rules is None:
        rules = list(StandingApproval.objects.filter(agent=run.agent, revoked_at__isnull=True)
                     .select_related("granted_by").order_by("created_at", "id"))
    done = 0
    for row in candidates:
        rule = next((r for r in rules if policies.standing_matches(
            r, agent=run.agent, request=row.format, now=now)), None)
        if rule is None:
            continue
        row.decision = policies.standing_answer(row.format, rule, row.required_approvals)
        row.decided_by, row.decided_at = rule.granted_by, now
        grantor = rule.granted_by.get_username() if rule.granted_by else ""
        # Not yet inserted: its INSERT (in ``interrupts_open``) carries the status.
        interrupt_transition(run=run, row=row, to=AgentInterrupt.Status.DECIDED, save=False,
                             action=AuditLog.Action.DECISION, actor=rule.granted_by,
                             surface="standing_approval", audits=audits,
                             payload={"answer": row.decision, "standing_approval": rule.pk,
                                      "grantor": grantor})
        done += 1
    return done


def interrupts_cancel_pending(*, run: AgentRun, actor: Any, surface: str = "") -> int:
    """Cancel the run's open questions (the run is being cancelled); return how many."""
    pending = list(AgentInterrupt.objects.select_for_update().filter(run=run, status=Pending))
    for item in pending:
        interrupt_transition(run=run, row=item, to=AgentInterrupt.Status.CANCELLED,
                             actor=actor, surface=surface)
    if pending:
        notify_user_on_commit(run.owner_id, {"type": "interrupts_changed",
                                             "run_id": str(run.id)})
    return len(pending)


def interrupts_close_decided(*, run: AgentRun, actor: Any, surface: str = "",
                             used: bool = False) -> int:
    """Close the run's answers not yet applied (the run is ending); return how many.

    ``used``: the run's segment was given them (the run was running or retrying): they
    are applied, as a segment that ends applies its answers. Otherwise no segment will
    apply them: cancelled, keeping the decision."""
    decided = list(AgentInterrupt.objects.select_for_update().filter(
        run=run, status=AgentInterrupt.Status.DECIDED, applied_at__isnull=True))
    if used:
        audits: list[AuditLog] = []
        writes: list[Write] = []
        interrupts_mark_applied(run=run, interrupt_ids=[i.interrupt_id for i in decided],
                                now=timezone.now(), audits=audits, writes=writes)
        writes_together(writes=writes, audits=audits)
        return len(decided)
    for item in decided:
        interrupt_transition(run=run, row=item, to=AgentInterrupt.Status.CANCELLED,
                             actor=actor, surface=surface)
    return len(decided)

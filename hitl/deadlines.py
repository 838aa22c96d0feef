"""Deadlines and escalation of interrupts (called by the sweep in execution.deadlines)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction

from hitl import notify, policies
from hitl.models import AgentInterrupt
from hitl.transitions import Pending, interrupt_transition
from observability import metrics
from runs.models import AgentRun, AuditLog
from runs.services import audit, run_enqueue_on_commit, run_transition
from streams.publish import notify_user_on_commit


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
            row.decision, row.decided_at = row.default_answer, now
            interrupt_transition(run=run, row=row, to=AgentInterrupt.Status.DECIDED,
                                 action=AuditLog.Action.DECISION, actor=policies.TIMEOUT_ACTOR,
                                 payload={"default": row.decision},
                                 fields=("decision", "decided_at"))
        else:
            interrupt_transition(run=run, row=row, to=AgentInterrupt.Status.EXPIRED,
                                 actor=policies.TIMEOUT_ACTOR)
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
        metrics.interrupt_escalated(agent=run.agent)
        notify.on_commit("interrupt.escalated", run=run, interrupt=row,
                         groups=[g.name for g in groups])
        notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
    return True


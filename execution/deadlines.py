"""Deadlines and escalation, run by the periodic ``hitl.sweep`` task (Celery beat).

Each interrupt whose escalation time passed gets its escalation groups as assignees
(``hitl.deadlines.interrupt_escalate``). Each paused run with an interrupt past its
deadline is locked and settled in one transaction: a default answer resumes the run
(audited with actor "timeout"); without one the interrupt expires and the run ends
``expired`` (its other open questions cancelled), which frees its thread and publishes
a ``RUN_FINISHED`` whose result says ``expired``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from agui import outcomes
from execution import history
from hitl import deadlines as interrupt_deadlines
from hitl import lifecycle as interrupts
from hitl import policies
from hitl.models import AgentInterrupt
from runs.models import AgentRun
from runs.services import run_transition
from streams.publish import publish_on_commit

# A sweep handles at most this many of each; the next one (seconds later) takes the rest.
BATCH = 200


def sweep(now: datetime | None = None) -> dict[str, int]:
    """Escalate and expire what is due; return how many of each."""
    now = now or timezone.now()
    escalated = sum(interrupt_deadlines.interrupt_escalate(interrupt_pk=pk, now=now) for pk in
                    AgentInterrupt.objects.filter(
                        status=AgentInterrupt.Status.PENDING, escalate_at__lte=now,
                        escalated_at__isnull=True).values_list("pk", flat=True)[:BATCH])
    due = set(AgentInterrupt.objects.filter(
        status=AgentInterrupt.Status.PENDING, expires_at__lte=now,
        run__status=AgentRun.Status.PAUSED).values_list("run_id", flat=True)[:BATCH])
    # Expired by a late answer (the decision service marks it and refuses the answer).
    due |= set(AgentInterrupt.objects.filter(
        status=AgentInterrupt.Status.EXPIRED,
        run__status=AgentRun.Status.PAUSED).values_list("run_id", flat=True)[:BATCH])
    ended = sum(run_settle_deadlines(run_id=run_id, now=now) for run_id in due)
    return {"escalated": escalated, "runs_checked": len(due), "runs_expired": ended}


def run_settle_deadlines(*, run_id: Any, now: datetime) -> bool:
    """Apply the deadlines of one paused run; True when the run ended ``expired``."""
    with transaction.atomic():
        run = AgentRun.objects.select_for_update().filter(pk=run_id).first()
        # Locked: an answer, a cancel or another sweep may have moved the run on.
        if run is None or run.status != AgentRun.Status.PAUSED:
            return False
        expired = interrupt_deadlines.interrupts_expire_due(run=run, now=now)
        if not expired:
            return False
        interrupts.interrupts_cancel_pending(run=run, actor=policies.TIMEOUT_ACTOR)
        run.error = (f"interrupt {expired[0].interrupt_id} expired with no default answer")
        run_transition(run=run, to=AgentRun.Status.EXPIRED, actor=policies.TIMEOUT_ACTOR,
                       payload={"expired": [r.interrupt_id for r in expired]},
                       fields=("error",))
        history.repair_on_commit(run)  # tool calls it left unanswered (execution.history)
        # A paused run has no live AG-UI run: a whole one says how it ended.
        publish_on_commit(run.id, outcomes.standalone_end(run))
    return True




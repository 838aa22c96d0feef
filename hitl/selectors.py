"""Who may see, decide and cancel what: the one place for the "owner or reviewer" rule.

A user may see, decide (answer its interrupts) and cancel their own runs; a reviewer, a
user with ``hitl.decide_interrupt``, every run. A superuser is a reviewer (Django gives
an active superuser every permission, and the admin already shows them everything).
One rule for every surface: REST, AG-UI, SSE, the chat pages and the admin ask here
(``can_decide``, ``visible_runs``, ``visible_conversations``).
"""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import OuterRef, QuerySet

from hitl.models import AgentInterrupt
from runs.models import AgentRun, Conversation

DECIDE_PERMISSION = "hitl.decide_interrupt"

# ``.annotate(**ASSIGNMENT_IDS)``: an interrupt's assignees and groups as id arrays, in
# the same query (``hitl.policies.assignment`` reads them).
ASSIGNMENT_IDS = {
    "assignee_ids": ArraySubquery(AgentInterrupt.assignees.through.objects.filter(
        agentinterrupt_id=OuterRef("pk")).values("user_id")),
    "group_ids": ArraySubquery(AgentInterrupt.assigned_groups.through.objects.filter(
        agentinterrupt_id=OuterRef("pk")).values("group_id")),
}


def is_reviewer(user: Any) -> bool:
    if not (user and user.is_authenticated):
        return False
    # A superuser first: no permission query (has_perm says the same for an active one).
    return bool(user.is_active and user.is_superuser) or user.has_perm(DECIDE_PERMISSION)


def can_decide(user: Any, owned: AgentRun | Conversation) -> bool:
    """May ``user`` answer the interrupts of a run (or a conversation's runs), cancel it,
    and see and watch it?"""
    if user is None or not user.is_authenticated:
        return False
    # The owner first: the permission lookup costs queries and most answers are the owner's.
    return owned.owner_id == user.pk or is_reviewer(user)


def decidable_runs(user: Any) -> QuerySet[AgentRun]:
    """Runs whose interrupts ``user`` may decide, and that they may cancel: own runs, or
    all for a reviewer."""
    if is_reviewer(user):
        return AgentRun.objects.all()
    return AgentRun.objects.filter(owner=user)


def visible_runs(user: Any) -> QuerySet[AgentRun]:
    """Runs ``user`` may read by id (and stream): those they may decide, no more and no
    fewer, so that nothing answers 404 to a read and then lets the same user act."""
    return decidable_runs(user)


def visible_conversations(user: Any) -> QuerySet[Conversation]:
    """Conversations ``user`` may read by id: own, or all for a reviewer."""
    if is_reviewer(user):
        return Conversation.objects.all()
    return Conversation.objects.filter(owner=user)


def decidable_interrupts(user: Any) -> QuerySet[AgentInterrupt]:
    if is_reviewer(user):
        return AgentInterrupt.objects.all()
    return AgentInterrupt.objects.filter(run__owner=user)


def pending_interrupts(run: AgentRun) -> QuerySet[AgentInterrupt]:
    """The run's open questions, in the order they were asked."""
    return run.interrupts.filter(status=AgentInterrupt.Status.PENDING).order_by("created_at", "id")

"""Who may decide a pending interrupt: assign, claim, release (from the admin), and the
name lookup the policies' assignees go through."""

from __future__ import annotations

from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from agentsite.errors import Conflict, Forbidden, InvalidInput, NotFound
from hitl import policies
from hitl.models import AgentInterrupt
from hitl.selectors import is_reviewer
from hitl.transitions import Pending
from runs.models import AgentRun, AuditLog
from runs.services import audit
from streams.publish import notify_user_on_commit


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
            found_users, found_groups = resolve_names(users, groups)
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


def resolve_names(users: Any, groups: Any) -> tuple[list[Any], list[Group]]:
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


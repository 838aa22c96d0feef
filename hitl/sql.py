"""The interrupts' hot-path SQL, by ``cursor.execute`` (issue 37): statements that run
inside the run's status change (``runs.sql.writes_together``), one round trip for both."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from hitl.models import AgentInterrupt, AgentWebhook, StandingApproval
from runs.models import AgentRun
from runs.sql import Related, Write, json_rows

_META = AgentInterrupt._meta
_TABLE = connection.ops.quote_name(_META.db_table)
Status = AgentInterrupt.Status

# decided → applied, at the end of the segment that resumed with these answers. Run
# under the run's row lock (the pause / finish holds it, ``execution.lifecycle``): a
# late answer or a cancel of the same run waits for it, so no row changes between the
# claim's read of the answers and this.
APPLIED_SQL = (f"UPDATE {_TABLE} SET status = %s, applied_at = %s "
               "WHERE run_id = %s AND applied_at IS NULL AND status = %s "
               "AND interrupt_id = ANY(%s)")


def applied_write(*, run_id: Any, interrupt_ids: Sequence[str], now: datetime) -> Write:
    """The UPDATE that marks the run's decided ``interrupt_ids`` applied."""
    return APPLIED_SQL, [Status.APPLIED, now, run_id, Status.DECIDED, list(interrupt_ids)]


def _interrupts_related(attr: str, where: str, *, assignment: bool) -> Related:
    """The run's interrupts (``where``: more conditions on ``t``), locked after the run
    (in id order, as every writer takes them), as ``attr``: a list of instances."""
    q = connection.ops.quote_name
    pk = q(_META.pk.column)
    extra: tuple[str, ...] = ()
    arrays = ""
    if assignment:  # as ``hitl.selectors.ASSIGNMENT_IDS`` reads them: id arrays
        users = _META.get_field("assignees").remote_field.through._meta
        groups = _META.get_field("assigned_groups").remote_field.through._meta
        arrays = (f", ARRAY(SELECT m.{q('user_id')} FROM {q(users.db_table)} m "
                  f"WHERE m.{q('agentinterrupt_id')} = t.{pk}) AS assignee_ids"
                  f", ARRAY(SELECT g.{q('group_id')} FROM {q(groups.db_table)} g "
                  f"WHERE g.{q('agentinterrupt_id')} = t.{pk}) AS group_ids")
        extra = ("assignee_ids", "group_ids")
    # FOR UPDATE: a locked row is read as its latest version, whatever the snapshot (a
    # decision that waited for another one's commit sees its answers).
    sql = (f"SELECT jsonb_agg(to_jsonb(i) ORDER BY i.{pk}) FROM (SELECT t.*{arrays} "
           f"FROM {_TABLE} t WHERE t.{q('run_id')} = r.id{where} ORDER BY t.{pk} "
           "FOR UPDATE OF t) i")
    return Related(attr, sql, lambda items: json_rows(AgentInterrupt, items, extra))


# A decision's: every interrupt of the run, with its assignment (``hitl.decide``).
DECIDING = _interrupts_related("interrupts_locked", "", assignment=True)
# A claim's: the run's interrupts not yet fed to the graph (``applied_at`` is set once and
# never cleared, so a row the snapshot saw unapplied is rechecked as its locked version).
UNAPPLIED = _interrupts_related("interrupts_unapplied", " AND t.applied_at IS NULL",
                                assignment=False)


def _fact(attr: str, sql: str) -> Related:
    """One value read with the run's lock (``runs.sql.run_lock``), as JSON."""
    return Related(attr, f"SELECT to_jsonb(({sql}))", lambda value: value)


def _facts() -> tuple[tuple[Related, ...], tuple[Related, ...]]:
    # What ``hitl.notify.QUESTION_FACTS`` / ``RUN_FACTS`` read, as the run's lock's
    # subqueries (plain SQL: the ORM compiled those on every segment's end).
    q = connection.ops.quote_name
    users = AgentRun._meta.get_field("owner").related_model._meta
    hooks = AgentWebhook._meta
    assignees = _META.get_field("assignees").remote_field.through._meta
    groups = _META.get_field("assigned_groups").remote_field.through._meta
    question = (
        _fact("notify_owner_email", f"SELECT u.{q('email')} FROM {q(users.db_table)} u "
                                    f"WHERE u.{q(users.pk.column)} = r.{q('owner_id')}"),
        _fact("notify_agent_hooked", f"SELECT EXISTS(SELECT 1 FROM {q(hooks.db_table)} h "
                                     f"WHERE h.{q('agent')} = r.{q('agent')} "
                                     f"AND h.{q('active')})"))
    assigned = " OR ".join(
        f"EXISTS(SELECT 1 FROM {q(through.db_table)} m JOIN {_TABLE} t "
        f"ON t.{q(_META.pk.column)} = m.{q('agentinterrupt_id')} WHERE t.{q('run_id')} = r.id)"
        for through in (assignees, groups))
    return question, (*question, _fact("notify_run_assigned", f"SELECT {assigned}"))


# ``hitl.notify.anyone_for`` reads these (a pause's lock), ``anyone_for_end`` these too.
QUESTION_FACTS, RUN_FACTS = _facts()


def _standing() -> Related:
    # The agent's active standing approvals with their grantors, in the order they apply
    # (``hitl.lifecycle._standing_approvals``). Granted and revoked without the run's lock:
    # read in the lock statement's snapshot is as good as read a moment before.
    q = connection.ops.quote_name
    rules = StandingApproval._meta
    users = rules.get_field("granted_by").related_model._meta
    sql = (f"SELECT jsonb_agg(jsonb_build_object('rule', to_jsonb(s), 'grantor', to_jsonb(u)) "
           f"ORDER BY s.{q('created_at')}, s.{q('id')}) FROM {q(rules.db_table)} s "
           f"LEFT JOIN {q(users.db_table)} u ON u.{q(users.pk.column)} = "
           f"s.{q('granted_by_id')} WHERE s.{q('agent')} = r.{q('agent')} "
           f"AND s.{q('revoked_at')} IS NULL")

    def build(items: list[dict[str, Any]] | None) -> list[StandingApproval]:
        found = []
        for item in items or ():
            (rule,) = json_rows(StandingApproval, [item["rule"]])
            grantor = json_rows(users.model, [item["grantor"]]) if item["grantor"] else [None]
            rule.granted_by = grantor[0]
            found.append(rule)
        return found

    return Related("standing_rules", sql, build)


# A pause's: what ``hitl.lifecycle.interrupts_open`` matches new questions against.
STANDING = _standing()

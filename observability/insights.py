"""The figures of the admin's Insights page over the interrupts raised in a date range,
filtered by agent, format and assignee group, each from one SQL query (Postgres:
``percentile_cont`` for the medians; a stored generated column of each decided question's
tools and decisions, grouped; one count of the questions by the day raised and the day
closed for the backlog and the deadlines). Nothing is looped over in Python but the rows
each query returns (a handful per agent, format, reviewer, tool combination or day).
docs/observability.md ("Insights") says why each is read the way it is.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.utils import timezone

from hitl.models import AgentInterrupt
from runs.models import AgentRun, SegmentUsage

INTERRUPTS = AgentInterrupt._meta.db_table
RUNS = AgentRun._meta.db_table
GROUPS_LINK = AgentInterrupt.assigned_groups.through._meta.db_table
GROUPS = Group._meta.db_table
USAGE = SegmentUsage._meta.db_table
# A stored generated column of the interrupts (hitl migration 0011): each decided
# question's [[tool, ...], [decision, ...]]; the models do not know it.
TOOL_DECISIONS = "insights_tool_decisions"
# The decided questions it could not hold (the partial index of migration 0011).
UNREAD = (f"i.{TOOL_DECISIONS} IS NULL AND i.decision IS NOT NULL "
          "AND i.kind IN ('hitl_request', 'tool_approval', 'review')")
DECISION_TYPES = ("approve", "edit", "reject", "respond")
MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Filters:
    """Days ``start`` to ``end`` (both included, the server's time zone) and the
    optional agent, format (``AgentInterrupt.kind``) and assignee group name."""

    start: date
    end: date
    agent: str = ""
    format: str = ""
    group: str = ""

    def bounds(self) -> tuple[datetime, datetime]:
        zone = timezone.get_current_timezone()
        return (datetime.combine(self.start, time.min, zone),
                datetime.combine(self.end + timedelta(days=1), time.min, zone))


@dataclass
class Where:
    """The interrupts' WHERE clause for ``Filters`` (``i``: the interrupt, ``r``: its
    run), with its parameters; ``created`` False leaves the date range out."""

    sql: str
    params: list[Any] = field(default_factory=list)
    # The join to the run, where the clause needs it (an agent filter); queries that read
    # the run's columns join it themselves.
    runs: str = ""


def where(filters: Filters, *, created: bool = True) -> Where:
    parts, params = ["TRUE"], []
    if created:
        parts.append("i.created_at >= %s AND i.created_at < %s")
        params += list(filters.bounds())
    if filters.agent:
        parts.append("r.agent = %s")
        params.append(filters.agent)
    if filters.format:
        parts.append("i.kind = %s")
        params.append(filters.format)
    if filters.group:
        parts.append(f"EXISTS (SELECT 1 FROM {GROUPS_LINK} ig JOIN {GROUPS} g ON g.id = "
                     "ig.group_id WHERE ig.agentinterrupt_id = i.id AND g.name = %s)")
        params.append(filters.group)
    return Where(" AND ".join(parts), params,
                 f"JOIN {RUNS} r ON r.id = i.run_id" if filters.agent else "")


def _rows(sql: str, params: list[Any]) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [c.name for c in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


WAITED = "EXTRACT(EPOCH FROM (i.decided_at - i.created_at))"


def time_to_decision(filters: Filters) -> dict[str, list[dict[str, Any]]]:
    """p50 / p90 seconds from raised to decided (by a person or a default), and how many,
    per agent, per format and per reviewer: one query (GROUPING SETS)."""
    w = where(filters)
    # The waits first, narrow (agent, format, reviewer id, seconds): three sorts of them.
    # Grouped byte-wise ("C": the sorts compare bytes, not the locale's rules) on float8
    # (not EXTRACT's numeric); the reviewers' names joined to the result rows only.
    rows = _rows(f"""
        WITH waits AS MATERIALIZED (
            SELECT r.agent COLLATE "C" AS agent, i.kind COLLATE "C" AS kind,
                   i.decided_by_id, {WAITED}::float8 AS waited
            FROM {INTERRUPTS} i JOIN {RUNS} r ON r.id = i.run_id
            WHERE {w.sql} AND i.decided_at IS NOT NULL
              AND i.status IN ('decided', 'applied')
        ), grouped AS (
            SELECT agent, kind, decided_by_id,
                   GROUPING(agent) AS no_agent, GROUPING(kind) AS no_format,
                   count(*) AS decided,
                   -- Both from one sort of each group's waits.
                   percentile_cont(ARRAY[0.5, 0.9]) WITHIN GROUP (ORDER BY waited) AS p
            FROM waits GROUP BY GROUPING SETS ((agent), (kind), (decided_by_id)))
        SELECT g.agent, g.kind AS format, u.username AS reviewer, g.no_agent, g.no_format,
               g.decided, g.p
        FROM grouped g LEFT JOIN {get_user_model()._meta.db_table} u
            ON u.id = g.decided_by_id
        ORDER BY g.agent COLLATE "default", g.kind COLLATE "default", u.username""",
        w.params)
    out: dict[str, list[dict[str, Any]]] = {"agent": [], "format": [], "reviewer": []}
    for row in rows:
        by = "agent" if not row["no_agent"] else "format" if not row["no_format"] else "reviewer"
        name = row[by] if by != "reviewer" else (row["reviewer"] or "(default answer)")
        out[by].append({"name": name, "decided": row["decided"],
                        "p50": round(row["p"][0], 1), "p90": round(row["p"][1], 1)})
    return out


def decisions_per_tool(filters: Filters) -> list[dict[str, Any]]:
    """Approve / edit / reject / respond counts and rates per tool: the tools of batched
    LangChain requests (``hitl_request``, one decision per action, paired by position),
    of per-call ones (``tool_approval``) and our ``review`` kind (tool "review").

    Each decided question's tools and decisions are a stored column (``TOOL_DECISIONS``,
    hitl migration 0011), so the query groups the questions by it (a few distinct values)
    instead of parsing every request; the rare requests it could not hold (``UNREAD``,
    found through their partial index) come back whole and are read here: Postgres
    cannot read them as ``jsonb`` either."""
    w = where(filters)
    rows = _rows(f"""
        SELECT i.{TOOL_DECISIONS}::text AS pairs, count(*) AS n,
               NULL AS kind, NULL AS request, NULL AS decision
        FROM {INTERRUPTS} i {w.runs}
        WHERE {w.sql} AND i.{TOOL_DECISIONS} IS NOT NULL
        GROUP BY i.{TOOL_DECISIONS}
        UNION ALL
        SELECT NULL, 1, i.kind, i.request::text, i.decision::text
        FROM {INTERRUPTS} i {w.runs}
        WHERE {w.sql} AND {UNREAD}""", w.params * 2)
    counts: Counter[tuple[str | None, str | None]] = Counter()
    for row in rows:
        if row["pairs"] is not None:
            tools, chosen = json.loads(row["pairs"])
            for pair in zip(tools, chosen, strict=False):
                counts[_text(pair[0]), _text(pair[1])] += row["n"]
        else:
            for pair in _tool_decisions(row["kind"], json.loads(row["request"]),
                                        json.loads(row["decision"])):
                counts[pair] += 1
    per_tool: dict[str | None, dict[str, Any]] = {}
    for (tool, decision), n in counts.items():
        if decision not in DECISION_TYPES:
            continue
        entry = per_tool.setdefault(tool, {"tool": tool, "total": 0,
                                           **dict.fromkeys(DECISION_TYPES, 0)})
        entry["total"] += n
        entry[decision] += n
    out = sorted(per_tool.values(), key=lambda e: (-e["total"], e["tool"] is None,
                                                   e["tool"] or ""))
    for row in out:
        for kind in DECISION_TYPES:
            row[f"{kind}_rate"] = round(100 * row[kind] / row["total"], 1)
    return out


def _text(value: Any) -> str | None:
    """A JSON value as ``->>`` gives it: a string as is, anything else as JSON."""
    return value if value is None or isinstance(value, str) else json.dumps(value)


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _tool_decisions(kind: str, request: Any, decision: Any) -> list[tuple[Any, Any]]:
    """(tool, decision type) of one decided question, as migration 0011's column holds
    them: a batched request's actions and its answer's decisions, paired by position."""
    if kind == "review":
        return [("review", _text(_field(decision, "decision")))]
    if kind == "tool_approval":
        return [(_text(_field(request, "name")), _text(_field(decision, "type")))]
    calls, chosen = _field(request, "action_requests"), _field(decision, "decisions")
    if not isinstance(calls, list) or not isinstance(chosen, list):
        return []
    return [(_text(_field(call, "name")), _text(_field(choice, "type")))
            for call, choice in zip(calls, chosen, strict=False)]


# When an interrupt stopped waiting: decided (or answered by default), else for an
# expired one its deadline, else (cancelled with its run) the run's end.
# The run is read for those rows only (they are few): no join of every run.
CLOSED = ("COALESCE(i.decided_at, CASE WHEN i.status = 'expired' THEN i.expires_at END, "
          "CASE WHEN i.status <> 'pending' THEN COALESCE((SELECT ended.finished_at "
          f"FROM {RUNS} ended WHERE ended.id = i.run_id), i.created_at) END)")


def _days(filters: Filters) -> list[date]:
    return [filters.start + timedelta(days=n)
            for n in range((filters.end - filters.start).days + 1)]


def by_day(filters: Filters) -> list[dict[str, Any]]:
    """The questions raised before the range's end, counted by the day each was raised
    and the day it closed (``width_bucket`` over the days' first instants and the range's
    end: 0 before the range, N + 1 after it, NULL still open), with how many of them are
    overdue now, escalated and expired: one pass, for ``backlog`` and ``deadlines``."""
    w = where(filters, created=False)
    _begin, stop = filters.bounds()
    zone = timezone.get_current_timezone()
    edges = [datetime.combine(day, time.min, zone) for day in _days(filters)] + [stop]
    now = timezone.now()
    return _rows(f"""
        SELECT width_bucket(i.created_at, %s::timestamptz[]) AS opened,
               width_bucket({CLOSED}, %s::timestamptz[]) AS closed, count(*) AS n,
               count(*) FILTER (WHERE i.status = 'pending' AND (i.escalate_at < %s
                   OR i.expires_at < %s OR i.created_at < %s)) AS overdue,
               count(*) FILTER (WHERE i.escalated_at IS NOT NULL) AS escalated,
               count(*) FILTER (WHERE i.status = 'expired') AS expired
        FROM {INTERRUPTS} i {w.runs}
        WHERE {w.sql} AND i.created_at < %s
        GROUP BY 1, 2""",
        [edges, edges, now, now, now - timedelta(seconds=settings.INTERRUPT_OVERDUE_SECONDS),
         *w.params, stop])


def deadlines(filters: Filters, counted: list[dict[str, Any]] | None = None) -> dict[str, int]:
    """Of the interrupts raised in the range: overdue now (pending past escalation time,
    deadline, or ``INTERRUPT_OVERDUE_SECONDS``: ``observability.collectors``),
    escalated, and expired. ``counted``: ``by_day``'s rows, when read already."""
    rows = [row for row in (counted if counted is not None else by_day(filters))
            if row["opened"] >= 1]  # raised in the range
    return {key: sum(row[key] for row in rows)
            for key in ("overdue", "escalated", "expired")} | {
        "raised": sum(row["n"] for row in rows)}


def backlog(filters: Filters, counted: list[dict[str, Any]] | None = None
            ) -> list[dict[str, Any]]:
    """Interrupts waiting at the end of each day of the range: those waiting before it,
    plus the day-by-day raised minus closed (sums over ``by_day``'s few hundred rows;
    ``counted``: those rows, when read already)."""
    rows = counted if counted is not None else by_day(filters)
    days = _days(filters)
    waiting = sum(row["n"] for row in rows
                  if row["opened"] == 0 and (row["closed"] is None or row["closed"] >= 1))
    delta = [0] * (len(days) + 2)
    for row in rows:
        delta[row["opened"]] += row["n"]
        if row["closed"] is not None:
            delta[row["closed"]] -= row["n"]
    out = []
    for n, day in enumerate(days, start=1):
        waiting += delta[n]
        out.append({"day": day, "waiting": waiting})
    return out


def usage(filters: Filters) -> dict[str, list[dict[str, Any]]]:
    """Tokens per agent and per model over the segments recorded in the range (the agent
    filter applies; format and group do not: tokens belong to segments, not questions),
    with their cost from ``MODEL_PRICES`` ("unknown" where a model has no price)."""
    begin, stop = filters.bounds()
    params: list[Any] = [begin, stop]
    agent = ""
    if filters.agent:
        agent, params = "AND r.agent = %s", [*params, filters.agent]
    rows = _rows(f"""
        SELECT r.agent, u.model_name AS model, GROUPING(r.agent) AS no_agent,
               sum(u.calls) AS calls, sum(u.input_tokens) AS input,
               sum(u.output_tokens) AS output, sum(u.total_tokens) AS total
        FROM {USAGE} u JOIN {RUNS} r ON r.id = u.run_id
        WHERE u.created_at >= %s AND u.created_at < %s {agent}
        GROUP BY GROUPING SETS ((r.agent, u.model_name), (u.model_name))
        ORDER BY total DESC""", params)
    prices = settings.MODEL_PRICES
    per_agent: dict[str, dict[str, Any]] = {}
    per_model = []
    for row in rows:
        price = prices.get(row["model"])
        cost = (None if price is None else
                (row["input"] * price[0] + row["output"] * price[1]) / MILLION)
        if row["no_agent"]:
            per_model.append({"name": row["model"] or "(not reported)", "calls": row["calls"],
                              "input": row["input"], "output": row["output"],
                              "total": row["total"], "cost": _money(cost)})
            continue
        entry = per_agent.setdefault(row["agent"], {
            "name": row["agent"], "calls": 0, "input": 0, "output": 0, "total": 0,
            "cost": Decimal(0)})
        for key in ("calls", "input", "output", "total"):
            entry[key] += row[key]
        # One unpriced model makes the agent's cost unknown (not a partial sum).
        entry["cost"] = None if cost is None or entry["cost"] is None else entry["cost"] + cost
    agents = sorted(per_agent.values(), key=lambda e: (-e["total"], e["name"]))
    for entry in agents:
        entry["cost"] = _money(entry["cost"])
    return {"agent": agents, "model": per_model}


def _money(cost: Decimal | None) -> str:
    return "unknown" if cost is None else f"{cost.quantize(Decimal('0.0001'))}"


def choices() -> dict[str, list[str]]:
    """The filters' options: agents and formats seen, and the groups. The formats by a
    loose scan of their index (migration 0011): one probe per format."""
    return {"agent": sorted(AgentRun.objects.values_list("agent", flat=True).distinct()
                            .order_by()),
            "format": [row["kind"] for row in _rows(f"""
                WITH RECURSIVE seen AS (
                    SELECT min(kind) AS kind FROM {INTERRUPTS}
                    UNION ALL
                    SELECT (SELECT min(kind) FROM {INTERRUPTS} WHERE kind > seen.kind)
                    FROM seen WHERE seen.kind IS NOT NULL)
                SELECT kind FROM seen WHERE kind IS NOT NULL""", [])],
            "group": list(Group.objects.order_by("name").values_list("name", flat=True))}

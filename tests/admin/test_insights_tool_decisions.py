"""Decisions per tool come from a stored generated column (hitl migration 0011), and a
request that ``jsonb`` cannot hold (a ``\\u0000`` escape: ``json`` keeps it) is still
stored, and still counted, the slow way; a decision made later fills the column."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from hitl.models import AgentInterrupt
from observability import insights
from tests.accounts import make_user
from tests.insights_rows import BATCH, _asked, _run

pytestmark = pytest.mark.django_db

ODD = {"action_requests": [{"name": "send_email", "args": {"body": "a\x00b"}},
                           {"name": "delete_file", "args": {}}],
       "review_configs": []}


def column(row: AgentInterrupt):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {insights.TOOL_DECISIONS} FROM hitl_agentinterrupt "
                       "WHERE id = %s", [row.pk])
        (value,) = cursor.fetchone()
    return None if value is None else json.loads(value)  # Django reads jsonb as text


def test_every_decided_tool_is_counted_with_or_without_the_column():
    owner = make_user("owner")
    run = _run(owner, "a1")
    created = timezone.now() - timedelta(hours=1)
    both = {"decisions": [{"type": "approve"}, {"type": "reject"}]}
    plain = _asked(run, "hitl_request", created, waited=5, by=owner, request=BATCH,
                   decision=both)
    odd = _asked(run, "hitl_request", created, waited=5, by=owner, request=ODD,
                 decision={"decisions": [{"type": "edit"}, {"type": "reject"}]})
    one = _asked(run, "tool_approval", created, waited=5, by=owner,
                 request={"type": "tool_approval", "name": "send_email", "args": {"x": "\x00"}},
                 decision={"type": "respond"})
    review = _asked(run, "review", created, waited=5, by=owner,
                    request={"type": "review", "message": "?", "proposal": {}},
                    decision={"decision": "approve"})
    waiting = _asked(run, "hitl_request", created, request=BATCH)

    assert column(plain) == [["send_email", "delete_file"], ["approve", "reject"]]
    assert column(review) == [["review"], ["approve"]]
    assert column(odd) is None and column(one) is None and column(waiting) is None

    today = timezone.localdate()
    f = insights.Filters(start=today - timedelta(days=1), end=today)
    tools = {r["tool"]: r for r in insights.decisions_per_tool(f)}
    assert {t: (r["total"], r["approve"], r["edit"], r["reject"], r["respond"])
            for t, r in tools.items()} == {
        "send_email": (3, 1, 1, 0, 1), "delete_file": (2, 0, 0, 2, 0),
        "review": (1, 1, 0, 0, 0)}
    assert tools["send_email"]["respond_rate"] == 33.3

    # Answered later: Postgres fills the column on the update.
    AgentInterrupt.objects.filter(pk=waiting.pk).update(decision=both, status="decided")
    assert column(waiting) == [["send_email", "delete_file"], ["approve", "reject"]]
    assert {r["tool"]: r["total"] for r in insights.decisions_per_tool(f)} == {
        "send_email": 4, "delete_file": 3, "review": 1}

"""The Insights page reads its time-to-decision figures on a second connection, on the
first one's snapshot (observability.shared_snapshot): committed data (no test
transaction around it), the same figures as one connection reads, and a change
committed meanwhile seen by neither half."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from hitl.models import AgentInterrupt
from observability import insights, shared_snapshot
from tests.accounts import make_superuser, make_user
from tests.insights_rows import seed

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_page_reads_its_times_beside_on_one_snapshot(no_sweep):
    # no_sweep: the data is committed, and the seed's overdue question would be expired by
    # the session's deadline sweep (beat) mid-test (CI saw 2 expired where 1 is seeded).
    owner = make_user("owner")
    reviewer = make_user("reviewer", is_staff=True)
    reviewer.user_permissions.add(Permission.objects.get(codename="decide_interrupt"))
    days = seed(owner, reviewer, make_superuser("boss"))
    client = Client()
    client.force_login(reviewer)
    with CaptureQueriesContext(connection) as here:
        page = client.get(f"/admin/insights/?start={days['start']}&end={days['today']}")
    assert page.status_code == 200
    assert page.context["time_by_agent"] == [
        {"name": "a1", "decided": 5, "p50": 30.0, "p90": 46.0},
        {"name": "a2", "decided": 2, "p50": 80.0, "p90": 96.0}]
    assert {r["name"]: r["decided"] for r in page.context["time_by_reviewer"]} == {
        "boss": 2, "reviewer": 5}
    sql = [q["sql"] for q in here.captured_queries]
    assert any("pg_export_snapshot" in s for s in sql)
    assert not any("percentile_cont" in s for s in sql)  # on the other connection

    # Questions changed (committed) after the snapshot was taken: seen by neither half.
    f = insights.Filters(start=days["start"], end=days["today"])
    taken, go_on = threading.Event(), threading.Event()

    def later() -> None:
        taken.wait(10)
        try:
            AgentInterrupt.objects.filter(status="expired").update(status="applied")
            AgentInterrupt.objects.filter(kind="approval").update(decided_at=None)
        finally:
            connection.close()
            go_on.set()

    writer = threading.Thread(target=later)
    writer.start()
    with shared_snapshot.report_transaction() as beside:
        expired_here = insights.deadlines(f)["expired"]
        taken.set()
        go_on.wait(10)
        times = beside(insights.time_to_decision, f).result()
        expired_after = insights.deadlines(f)["expired"]
    writer.join()
    assert expired_here == expired_after == 1
    assert sum(r["decided"] for r in times["agent"]) == 7
    # Committed: seen after.
    assert insights.deadlines(f)["expired"] == 0
    assert sum(r["decided"] for r in insights.time_to_decision(f)["agent"]) == 3

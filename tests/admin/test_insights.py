"""The admin's Insights page: correct figures over a seeded set, its filters, CSV
exports, bad input answered 400, and reviewers (and superusers) only."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import Permission
from django.test import Client, override_settings

from observability import insights
from tests.accounts import make_superuser, make_user
from tests.insights_rows import seed

pytestmark = pytest.mark.django_db

PRICES = {"gpt-x": (1, 2)}


@pytest.fixture
def seeded():
    owner = make_user("owner", password="pw")
    reviewer = make_user("reviewer", password="pw", is_staff=True)
    reviewer.user_permissions.add(Permission.objects.get(codename="decide_interrupt"))
    boss = make_superuser("boss", password="pw")
    days = seed(owner, reviewer, boss)
    return {"owner": owner, "reviewer": reviewer, "boss": boss, **days}


def client_of(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def test_the_figures_of_the_seeded_set(seeded):
    f = insights.Filters(start=seeded["start"], end=seeded["today"])
    times = insights.time_to_decision(f)
    assert times["agent"] == [{"name": "a1", "decided": 5, "p50": 30.0, "p90": 46.0},
                              {"name": "a2", "decided": 2, "p50": 80.0, "p90": 96.0}]
    assert {r["name"]: r["decided"] for r in times["reviewer"]} == {"boss": 2, "reviewer": 5}
    assert {r["name"]: (r["p50"], r["p90"]) for r in times["format"]} == {
        "approval": (25.0, 37.0), "review": (50.0, 50.0), "hitl_request": (100.0, 100.0),
        "tool_approval": (60.0, 60.0)}
    tools = {r["tool"]: r for r in insights.decisions_per_tool(f)}
    assert set(tools) == {"send_email", "delete_file", "review"}
    assert (tools["send_email"]["total"], tools["send_email"]["approve_rate"],
            tools["send_email"]["edit_rate"]) == (2, 50.0, 50.0)
    assert (tools["delete_file"]["reject"], tools["delete_file"]["reject_rate"]) == (1, 100.0)
    assert tools["review"]["respond"] == 1
    assert insights.deadlines(f) == {"raised": 10, "overdue": 1, "escalated": 1, "expired": 1}
    assert [r["waiting"] for r in insights.backlog(f)] == [1, 1, 2]
    with override_settings(MODEL_PRICES=PRICES):
        used = insights.usage(f)
    assert [(r["name"], r["total"], r["cost"]) for r in used["agent"]] == [
        ("a1", 1_500_000, "2.0000"), ("a2", 15, "unknown")]
    assert [(r["name"], r["cost"]) for r in used["model"]] == [("gpt-x", "2.0000"),
                                                              ("mystery", "unknown")]


def test_filters_narrow_every_figure(seeded):
    day = {"start": seeded["start"], "end": seeded["today"]}
    a2 = insights.Filters(**day, agent="a2")
    assert [r["name"] for r in insights.time_to_decision(a2)["agent"]] == ["a2"]
    assert [r["name"] for r in insights.usage(a2)["agent"]] == ["a2"]
    approval = insights.Filters(**day, format="approval")
    assert insights.deadlines(approval)["raised"] == 6
    ops = insights.Filters(**day, group="ops")
    assert insights.time_to_decision(ops)["agent"] == [
        {"name": "a1", "decided": 1, "p50": 10.0, "p90": 10.0}]
    # Only the last day: the two raised on it, both still waiting.
    last = insights.Filters(start=seeded["today"], end=seeded["today"])
    assert insights.deadlines(last)["raised"] == 1
    assert [r["waiting"] for r in insights.backlog(last)] == [2]


def test_the_page_and_its_csv_exports(seeded):
    client = client_of(seeded["reviewer"])
    query = f"start={seeded['start']}&end={seeded['today']}"
    page = client.get(f"/admin/insights/?{query}")
    assert page.status_code == 200
    html = page.content.decode()
    # The admin's own theme script and icons are around it; the page adds no script.
    content = html.split('id="insights-filters"', 1)[1].split("<!-- END Content -->")[0]
    assert "<script" not in content and content.count('class="insights-chart"') == 2
    assert 'id="insights-time_by_agent"' in html and "46.0" in html
    exported = client.get(f"/admin/insights/?{query}&export=time_by_agent")
    assert exported["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert rows == [{"name": "a1", "decided": "5", "p50": "30.0", "p90": "46.0"},
                    {"name": "a2", "decided": "2", "p50": "80.0", "p90": "96.0"}]
    for table in ("time_by_format", "time_by_reviewer", "decisions_per_tool", "deadlines",
                  "backlog", "usage_by_agent", "usage_by_model"):
        response = client.get(f"/admin/insights/?{query}&export={table}")
        assert response.status_code == 200 and response.content.count(b"\n") >= 2, table


def test_bad_input_is_a_clear_400(seeded):
    client = client_of(seeded["reviewer"])
    backwards = client.get(f"/admin/insights/?start={seeded['today']}&end={seeded['start']}")
    assert backwards.status_code == 400 and "must not be after" in backwards.content.decode()
    assert client.get("/admin/insights/?start=yesterday").status_code == 400
    assert client.get("/admin/insights/?agent=nobody").status_code == 400
    unknown = client.get("/admin/insights/?export=secrets")
    assert unknown.status_code == 400 and "Unknown table" in unknown.content.decode()


def test_reviewers_and_superusers_only(seeded):
    clerk = make_user("clerk", password="pw", is_staff=True)
    assert client_of(seeded["reviewer"]).get("/admin/insights/").status_code == 200
    assert client_of(seeded["boss"]).get("/admin/insights/").status_code == 200
    assert client_of(clerk).get("/admin/insights/").status_code == 403
    for user in (seeded["owner"], None):  # not staff, anonymous: the admin's login
        response = client_of(user).get("/admin/insights/?export=backlog")
        assert response.status_code == 302 and "/admin/login/" in response["Location"]

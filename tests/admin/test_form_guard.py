"""Hostile posts and query strings on the admin queue (issue 27 findings 3, 4, 5, 8), over
the live server with a reviewer's logged-in session.

A NUL, an oversized field or a tampered action id is a 400 naming the field with nothing
written (agentsite.form_guard); a decision whose "decide and next" filter the queue
refuses stays recorded and the page goes back to the whole queue, never a 500.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest
from django.conf import settings

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from runs.services import run_start
from tests.sessions import login, post_form

QUEUE = "/admin/hitl/agentinterrupt/"


@pytest.fixture
def reviewer(live, staff) -> Iterator[httpx.Client]:
    client = login(live["base_url"], "reviewer")
    yield client
    client.close()


def refused(r: httpx.Response, field: str) -> bool:
    return r.status_code == 400 and f'<code class="refused-field">{field}</code>' in r.text


def untouched(*rows: AgentInterrupt) -> bool:
    for row in rows:
        row.refresh_from_db()
        if row.status != "pending" or row.decision is not None or row.assignees.exists():
            return False
    return not AuditLog.objects.filter(run__in=[r.run_id for r in rows]).exists()


def test_nul_in_the_decide_form_is_a_400(reviewer, staff, paused_run):
    row = paused_run(staff["alice"], ["approval"])[0]
    r = post_form(reviewer, f"{QUEUE}{row.pk}/change/", {"decision": "reject",
                                                          "reason": "no\x00way"})
    assert refused(r, "reason"), r.text[:300]
    assert untouched(row)


def test_an_answer_over_answer_max_bytes_on_the_decide_page_is_a_400(reviewer, staff,
                                                                     paused_run):
    row = paused_run(staff["alice"], ["approval"])[0]
    r = post_form(reviewer, f"{QUEUE}{row.pk}/change/", {"decision": "reject",
                                                          "reason": "r" * 2_000_000})
    assert refused(r, "reason") and f"at most {settings.ANSWER_MAX_BYTES}" in r.text
    assert untouched(row)


def test_nul_in_the_queue_query_string_is_a_400(reviewer, staff, paused_run):
    paused_run(staff["alice"], ["approval"])
    for query, field in (("?kind=%00", "kind"), ("?q=a%00", "q"), ("?status=%00", "status")):
        assert refused(reviewer.get(QUEUE + query), field), query
    assert reviewer.get(QUEUE + "?kind=approval").status_code == 200
    r = reviewer.get(f"{QUEUE}a%00b/change/")
    assert refused(r, "object_id"), r.text[:300]


def test_nul_in_the_assign_actions_user_list_is_a_400(reviewer, staff, paused_run):
    row = paused_run(staff["alice"], ["approval"])[0]
    r = post_form(reviewer, QUEUE, {"action": "assign_selected", "index": 0,
                                    "_selected_action": str(row.pk), "post": "yes",
                                    "users": "clerk,\x00bob"})
    assert refused(r, "users"), r.text[:300]
    assert untouched(row)


@pytest.mark.parametrize("action", ["approve_selected", "reject_selected", "assign_selected",
                                    "claim_selected"])
def test_tampered_action_ids_are_a_400_and_nothing_is_done(reviewer, staff, paused_run,
                                                           action):
    row = paused_run(staff["alice"], ["approval"])[0]
    data = {"action": action, "index": "0", "post": "yes", "reason": "no", "users": "clerk",
            "_selected_action": [str(row.pk), "zzz"]}
    r = post_form(reviewer, QUEUE, data)
    assert refused(r, "_selected_action"), r.text[:300]
    assert "zzz" in r.text
    assert untouched(row)
    # With the real id alone the same post is taken (the claim: nothing to resume).
    if action == "claim_selected":
        r = post_form(reviewer, QUEUE, {**data, "_selected_action": [str(row.pk)]})
        assert r.status_code == 302, r.text[:300]
        assert list(row.assignees.all()) == [staff["reviewer"]]


def _paused_approvals(owner) -> AgentRun:
    run = run_start(owner=owner, agent="approvals", input={}, message="ship")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status == "paused" and run.interrupts.filter(status="pending").count() == 2:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run stayed {run.status}")


@pytest.mark.parametrize("filters", ["nonexistent_field=1", "assignment=weird", "kind=%00"])
def test_decide_and_next_with_a_refused_filter_keeps_the_answer(reviewer, staff, filters):
    run = _paused_approvals(staff["alice"])
    first, second = run.interrupts.order_by("created_at", "id")
    url = f"{QUEUE}{first.pk}/change/?_changelist_filters={quote(filters)}"
    assert reviewer.get(url).status_code == 200
    r = post_form(reviewer, url, {"decision": "approve"})
    # The answer is recorded; the filter is dropped: back to the whole queue.
    assert r.status_code == 302, r.text[:300]
    assert r.headers["location"] == QUEUE
    first.refresh_from_db()
    assert (first.status, first.decision, first.decided_by) == (
        "decided", {"approved": True}, staff["reviewer"])
    assert AuditLog.objects.filter(run=run, action="decision",
                                   actor=staff["reviewer"], surface="admin").count() == 1
    queue = reviewer.get(QUEUE)
    assert queue.status_code == 200
    assert "filter was not valid" in queue.text
    second.refresh_from_db()
    assert second.status == "pending"

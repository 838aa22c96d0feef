"""Issue 28 in the admin: a run's retry state, failure (plain and technical) and token usage
on its page, its "Retry run" button (POST, CSRF, run_retry, a message), and the token usage
totals per user, agent and day (reviewers only)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from runs.models import AgentRun, AuditLog, SegmentUsage
from tests.retry_rows import DETAIL, PLAIN_ERROR, RATE_LIMITED, failed_run, retrying_run

pytestmark = pytest.mark.django_db

TOTALS = "/admin/runs/segmentusage/totals/"


def _login(user, **options) -> Client:
    client = Client(**options)
    client.force_login(user)
    return client


def _page(run) -> str:
    return f"/admin/runs/agentrun/{run.pk}/change/"


def _retry(run) -> str:
    return f"/admin/runs/agentrun/{run.pk}/retry/"


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _retry_audits(run) -> list[AuditLog]:
    return list(AuditLog.objects.filter(run=run, action="run.status", from_status="failed",
                                        to_status="retrying"))


def test_run_page_shows_retry_state_and_usage(staff, settings):
    run = retrying_run(staff["alice"], in_seconds=20, retries=2, usage=[(100, 20), (50, 30)])
    html = _login(staff["reviewer"]).get(_page(run)).content.decode()
    state = re.search(r'<p class="run-state run-state--retrying" id="run-retrying"[^>]*>(.*?)</p>',
                      html, re.S)
    assert state, html
    assert re.search(r"Retrying in (19|20) s \(attempt 2 of "
                     rf"{settings.MODEL_RUN_RETRIES}\): {re.escape(RATE_LIMITED)}\.",
                     _text(state.group(1)))
    words = _text(html)
    assert "Failure and retries" in words and "Token usage (all segments)" in words
    assert "upstream &lt;b&gt;exploded&lt;/b&gt;" in html  # error_detail, escaped
    assert "Token usage per segment" in words
    rows = re.findall(r'<tr class="form-row[^"]*"[^>]*id="usage-\d+"', html)
    assert len(rows) == 2, rows
    assert "gpt-4o-mini" in words and "200" in words
    assert 'id="retry-run"' not in html  # waiting: nothing to retry


def test_failed_run_retry_button_retries_once_with_messages(staff):
    run = failed_run(staff["alice"], usage=[(7, 3)])
    client = _login(staff["reviewer"])
    html = client.get(_page(run)).content.decode()
    assert f"The run failed: {PLAIN_ERROR}" in _text(html)
    assert f'<form method="post" action="{_retry(run)}" id="retry-run-form">' in html
    assert DETAIL.split(":")[0] in html
    response = client.post(_retry(run), follow=True)
    assert response.redirect_chain[-1][0] == _page(run)
    assert "The run is retrying: it goes on from its last checkpoint." in _text(
        response.content.decode())
    assert AgentRun.objects.get(pk=run.pk).status == "retrying"
    [audit] = _retry_audits(run)
    assert (audit.actor, audit.surface) == (staff["reviewer"], "admin")
    # Again: refused with the service's words, nothing more written.
    again = client.post(_retry(run), follow=True).content.decode()
    assert "Not retried: " in _text(again)
    assert len(_retry_audits(run)) == 1


def test_retry_refused_when_the_thread_moved_on(staff):
    old = failed_run(staff["alice"])
    failed_run(staff["alice"], conversation=old.conversation)
    client = _login(staff["reviewer"])
    response = client.post(_retry(old), follow=True).content.decode()
    assert "Not retried: " in _text(response)
    assert AgentRun.objects.get(pk=old.pk).status == "failed" and not _retry_audits(old)


def test_retry_by_role(staff):
    # The owner (staff without the decide permission) sees and uses the button on their run.
    mine = failed_run(staff["clerk"])
    clerk = _login(staff["clerk"])
    assert 'id="retry-run"' in clerk.get(_page(mine)).content.decode()
    assert clerk.post(_retry(mine)).status_code == 302
    assert [a.actor for a in _retry_audits(mine)] == [staff["clerk"]]
    # Someone else's run: "doesn't exist" for the page and the retry.
    theirs = failed_run(staff["alice"])
    assert clerk.get(_page(theirs)).status_code == 302
    response = clerk.post(_retry(theirs), follow=True)
    assert "doesn’t exist" in response.content.decode()
    # Staff who may read every run (view permission) but not decide: no button, no retry.
    staff["clerk"].user_permissions.add(Permission.objects.get(codename="view_agentrun"))
    clerk = _login(staff["clerk"])
    html = clerk.get(_page(theirs)).content.decode()
    assert "The run failed" in html and 'id="retry-run"' not in html
    assert "Not retried" in _text(clerk.post(_retry(theirs), follow=True).content.decode())
    # Not staff, or nobody: the admin's login.
    for client in (_login(staff["member"]), Client()):
        response = client.post(_retry(theirs))
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert AgentRun.objects.get(pk=theirs.pk).status == "failed" and not _retry_audits(theirs)


def test_retry_needs_post_and_csrf(staff):
    run = failed_run(staff["alice"])
    assert _login(staff["reviewer"]).get(_retry(run)).status_code == 405
    assert _login(staff["reviewer"], enforce_csrf_checks=True).post(_retry(run)).status_code \
        == 403
    assert AgentRun.objects.get(pk=run.pk).status == "failed" and not _retry_audits(run)


def _backdate(run, days: int) -> None:
    SegmentUsage.objects.filter(run=run).update(
        created_at=timezone.now() - timedelta(days=days))


def test_usage_totals_per_user_agent_model_and_day(staff, django_user_model):
    a = failed_run(staff["alice"], usage=[(100, 10), (200, 20)])              # 330, dev
    b = failed_run(staff["clerk"], usage=[(1000, 1)], agent="approvals")       # 1001
    old = failed_run(staff["alice"], usage=[(5, 5)], agent="approvals")        # 10, 40 days ago
    _backdate(old, 40)
    client = _login(staff["reviewer"])
    index = client.get("/admin/").content.decode()
    assert f'href="{TOTALS}"' in index
    html = client.get(TOTALS).content.decode()  # the last 30 days by default
    overall = _text(re.search(r'<p id="usage-overall">(.*?)</p>', html, re.S).group(1))
    assert "1331 tokens (1300 in, 31 out) in 3 model calls of 2 runs" in overall

    def table(name: str) -> list[list[str]]:
        body = re.search(rf'<div class="module" id="usage-per-{name}">(.*?)</div>', html,
                         re.S).group(1)
        rows = re.findall(r"<tr><th scope=\"row\">(.*?)</th>(.*?)</tr>", body, re.S)
        return [[_text(h).strip()] + [_text(c).strip() for c in re.findall(r"<td>(.*?)</td>",
                                                                            cells)]
                for h, cells in rows]

    assert table("user") == [["clerk", "1", "1", "1000", "1", "1001"],
                             ["alice", "1", "2", "300", "30", "330"]]
    assert table("agent") == [["approvals", "1", "1", "1000", "1", "1001"],
                              ["dev", "1", "2", "300", "30", "330"]]
    assert table("model") == [["gpt-4o-mini", "2", "3", "1300", "31", "1331"]]
    assert table("day") == [[timezone.localdate().isoformat(), "2", "3", "1300", "31", "1331"]]
    # A range that takes in the old run only.
    day = (timezone.localdate() - timedelta(days=40)).isoformat()
    html = client.get(TOTALS, {"start": day, "end": day}).content.decode()
    assert "10 tokens (5 in, 5 out) in 1 model call of 1 run" in _text(html)
    assert table("user") == [["alice", "1", "1", "5", "5", "10"]]
    # No lower bound: everything up to today.
    html = client.get(TOTALS, {"start": "", "end": timezone.localdate().isoformat()}).content
    assert "1341 tokens" in _text(html.decode())
    assert a.total_tokens + b.total_tokens + old.total_tokens == 1341


def test_usage_totals_bad_range_is_a_clear_400(staff):
    client = _login(staff["reviewer"])
    response = client.get(TOTALS, {"start": "yesterday", "end": "2026-13-45"})
    assert response.status_code == 400
    words = _text(response.content.decode())
    assert "From: Enter a valid date." in words and "To: Enter a valid date." in words
    response = client.get(TOTALS, {"start": "2026-02-02", "end": "2026-02-01"})
    assert response.status_code == 400
    assert "“From” must not be after “To”." in _text(response.content.decode())
    assert 'id="usage-overall"' not in response.content.decode()


def test_usage_is_for_reviewers_only(staff, django_user_model):
    failed_run(staff["alice"], usage=[(1, 1)])
    boss = django_user_model.objects.create_superuser("boss", password="pw-boss")
    assert _login(boss).get(TOTALS).status_code == 200
    assert f'href="{TOTALS}"' in _login(boss).get("/admin/").content.decode()
    assert _login(staff["reviewer"]).get("/admin/runs/segmentusage/").status_code == 200
    clerk = _login(staff["clerk"])
    assert clerk.get(TOTALS).status_code == 403
    assert clerk.get("/admin/runs/segmentusage/").status_code == 403
    assert f'href="{TOTALS}"' not in clerk.get("/admin/").content.decode()
    for client in (_login(staff["member"]), Client()):
        response = client.get(TOTALS)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]

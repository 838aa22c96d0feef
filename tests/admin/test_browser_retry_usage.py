"""Issue 28 in the admin, in headless Chromium: a failed run's page (failure, detail, usage)
and its "Retry run" button, a retrying run's state, and the token usage totals page."""

from __future__ import annotations

from playwright.sync_api import expect

from runs.models import AuditLog
from tests.retry_rows import PLAIN_ERROR, RATE_LIMITED, failed_run, retrying_run


def test_run_page_retry_and_usage_totals(login_as, shot, users):
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    waiting = retrying_run(users["outsider"], in_seconds=60, retries=1, usage=[(80, 20)])
    run = failed_run(users["owner"], usage=[(1200, 340), (300, 60)])
    page = login_as("reviewer", viewport={"width": 1400, "height": 1000})

    page.goto(f"/admin/runs/agentrun/{waiting.pk}/change/")
    expect(page.locator("#run-retrying")).to_contain_text(RATE_LIMITED)
    expect(page.locator("#run-retrying")).to_contain_text("(attempt 1 of")
    expect(page.locator("#retry-run")).to_have_count(0)

    page.goto(f"/admin/runs/agentrun/{run.pk}/change/")
    expect(page.locator("#run-failed")).to_contain_text(f"The run failed: {PLAIN_ERROR}")
    expect(page.locator("#usage-group")).to_contain_text("1200")
    shot(page, "admin-run-failed")
    page.locator("#retry-run").click()
    expect(page.locator(".messagelist")).to_contain_text("The run is retrying")
    expect(page.locator("#retry-run")).to_have_count(0)
    audit = AuditLog.objects.get(run=run, from_status="failed", to_status="retrying")
    assert (audit.actor, audit.surface) == (users["reviewer"], "admin")

    page.goto("/admin/")
    page.locator("#usage-index-link").click()
    expect(page.locator("#usage-overall")).to_contain_text("2000 tokens")
    expect(page.locator("#usage-per-user")).to_contain_text("owner")
    shot(page, "admin-usage-totals")

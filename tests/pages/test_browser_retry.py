"""Issue 28 in real Chromium: the retry banner (server-rendered, counting down, then live
from the run's "agentsite.retrying" AG-UI event), a failed run's error with its technical
detail and the Retry button, which continues the run (also without JavaScript).

The run's failure and retry state are written to the database and its events published
here as the worker would (no model provider: tests/providers/ covers the real path); the
Retry is the real one: run_retry, then the worker runs the agent's segment again.
"""

from __future__ import annotations

import re
from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from agui.events import run_error, run_started
from execution.lifecycle import retrying_event
from runs.models import AgentRun, AuditLog
from streams.publish import publish, wait_published
from tests.retry_rows import PLAIN_ERROR, RATE_LIMITED, failed_run, retrying_run


def banner_re(attempt: int, of: int) -> re.Pattern:
    return re.compile(re.escape(RATE_LIMITED) + r"\. Retrying in (\d+) s \(attempt "
                      + f"{attempt} of {of}" + r"\)")


def seconds_left(text: str) -> int:
    return int(re.search(r"Retrying in (\d+) s", text).group(1))


def test_retrying_banner_then_failure_and_retry(login_as, shot, users, settings):
    budget = settings.MODEL_RUN_RETRIES
    run = retrying_run(users["owner"], in_seconds=25, retries=2)
    page = login_as("owner")
    page.goto(f"/c/{run.conversation_id}/")
    banner = page.locator("#retry-banner")
    expect(banner).to_be_visible()
    expect(banner).to_have_text(banner_re(2, budget))
    expect(page.locator("#run-status")).to_contain_text("Retrying")
    expect(page.locator("#composer-reason")).to_contain_text("waiting to retry")
    first = seconds_left(banner.inner_text())
    assert 20 <= first <= 25, first
    shot(page, "retry-banner", full_page=False)
    # It counts down by itself.
    expect(banner).not_to_contain_text(f"in {first} s", timeout=5_000)
    assert seconds_left(banner.inner_text()) < first

    # The next failure, live: the worker's CUSTOM event (attempt 3, 40 s).
    AgentRun.objects.filter(pk=run.pk).update(
        retries=3, retry_at=timezone.now() + timedelta(seconds=40))
    run.refresh_from_db()
    publish(run.id, [run_started(thread_id=run.thread_id, run_id=str(run.id)),
                     retrying_event(run, 40)])
    wait_published()
    expect(banner).to_have_text(banner_re(3, budget))
    assert 35 <= seconds_left(banner.inner_text()) <= 40
    expect(page.locator("#run-status")).to_contain_text("Retrying")
    shot(page, "retry-banner-live", full_page=False)

    # Then a 500 with the budget used up: the run fails in plain words (RUN_ERROR, as
    # run_fail sends it).
    AgentRun.objects.filter(pk=run.pk).update(
        status="failed", error=PLAIN_ERROR, retry_at=None, finished_at=timezone.now(),
        error_detail="openai.InternalServerError: Error code: 500 - {'error': 'upstream'}")
    publish(run.id, [run_error(message=PLAIN_ERROR, code="provider_error")])
    wait_published()
    expect(banner).to_be_hidden()
    block = page.locator(f"#run-{run.id}")
    expect(block.locator(".run__error")).to_have_text(f"The run failed: {PLAIN_ERROR}")
    # Shown once: on the run (with its details and Retry), no header notice.
    expect(page.locator("[role=alert]", has_text=PLAIN_ERROR)).to_have_count(1)
    expect(page.locator("#run-status")).to_contain_text("Failed")
    detail = block.locator("details.run__detail")
    expect(detail.locator("pre")).to_be_hidden()
    detail.locator("summary").click()
    expect(detail.locator("pre")).to_contain_text("Error code: 500")
    retry = block.get_by_role("button", name="Retry")
    expect(retry).to_be_visible()
    shot(page, "retry-failed", full_page=False)

    # Retry: the run goes on (dev, with no checkpoint here, starts over and asks).
    retry.click()
    expect(page.locator(".card[data-status=pending].card--input")).to_be_visible()
    expect(page.locator("#run-status")).to_contain_text("Paused")
    expect(banner).to_be_hidden()
    expect(page.locator(".run__error")).to_have_count(0)
    expect(page.locator(f"#run-{run.id}")).not_to_contain_text(PLAIN_ERROR)  # not stale
    shot(page, "retry-continued", full_page=False)
    audit = AuditLog.objects.get(run=run, from_status="failed", to_status="retrying")
    assert (audit.actor, audit.surface) == (users["owner"], "page")


def test_reviewer_retries_without_javascript(login_as, shot, users):
    run = failed_run(users["owner"], usage=[(1200, 340)])
    page = login_as("reviewer", javascript=False)
    page.goto(f"/c/{run.conversation_id}/")
    block = page.locator(f"#run-{run.id}")
    expect(block.locator(".run__usage")).to_have_text(
        "Tokens: 1200 in / 340 out / 1540 total · gpt-4o-mini")
    expect(page.locator("#retry-banner")).to_be_hidden()
    shot(page, "retry-failed-nojs", full_page=False)
    block.get_by_role("button", name="Retry").click()
    # The page reloads itself while the run works (no script): it ends up asking.
    expect(page.locator(".card[data-status=pending].card--input")).to_be_visible(
        timeout=30_000)
    audit = AuditLog.objects.get(run=run, from_status="failed", to_status="retrying")
    assert (audit.actor, audit.surface) == (users["reviewer"], "page")

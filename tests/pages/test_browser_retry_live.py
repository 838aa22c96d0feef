"""Issue 35 items 15, 16 and 18 in real Chromium, with a run's events published here as
the worker publishes them around a provider retry (tests/providers/test_retry_text.py
checks the worker's own events):

- the header's pill and the run's footer show one status, live (Running → Retrying →
  Running → Failed), not "Retrying" above "Running" until a reload;
- the text a cut-off attempt streamed is replaced by the retried attempt's (the worker's
  MESSAGES_SNAPSHOT), live and when the page is loaded mid-run;
- a failure after a person's retry reads "failed again (attempt 2)" with its own time;
- a reviewer's header says what they can do ("Reviewing · owner's conversation").
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from agui.events import run_error, run_started, text_content, text_end, text_start
from execution.lifecycle import retrying_event
from execution.recovery import restated
from runs.models import AgentRun
from streams.publish import publish, wait_published
from tests.retry_rows import PLAIN_ERROR, RATE_LIMITED, make_run

CUT = "Thanks. The tool said:"
WHOLE = "Thanks. The tool said: the shop opens at 9."


def statuses(page, run: AgentRun) -> tuple[str, str]:
    return (page.locator("#run-status .status__label").inner_text(),
            page.locator(f"#run-{run.id} .run__foot [data-run-status]").inner_text())


def expect_status(page, run: AgentRun, label: str) -> None:
    expect(page.locator("#run-status .status__label")).to_have_text(label)
    expect(page.locator(f"#run-{run.id} .run__foot [data-run-status]")).to_have_text(label)


def send(run: AgentRun, events: list) -> None:
    publish(run.id, events)
    wait_published()


def test_one_status_and_no_repeated_text_across_a_retry(login_as, shot, users):
    # A lease nobody renews but that does not lapse: the suite's worker leaves it alone.
    held = {"lease_owner": "test", "lease_expires_at": timezone.now() + timedelta(hours=1)}
    run = make_run(users["owner"], AgentRun.Status.RUNNING, manual_retries=1, **held)
    message = str(run.assistant_message_id)
    page = login_as("owner")
    page.goto(f"/c/{run.conversation_id}/")
    expect_status(page, run, "Running")
    text = page.locator(f"#msg-{message} .msg__text")

    # The first attempt streams, then its model call is cut: the run waits to retry.
    send(run, [run_started(thread_id=run.thread_id, run_id=str(run.id)), text_start(message),
               text_content(message, CUT), text_end(message)])
    expect(text).to_have_text(CUT)
    AgentRun.objects.filter(pk=run.pk).update(
        status="retrying", retries=1, retry_reason=RATE_LIMITED, lease_owner="",
        retry_at=timezone.now() + timedelta(seconds=30))
    run.refresh_from_db()
    send(run, [retrying_event(run, 30)])
    expect(page.locator("#retry-banner")).to_be_visible()
    expect_status(page, run, "Retrying")
    shot(page, "retry-live-retrying", full_page=False)

    # The next attempt restates the message, then streams it anew.
    AgentRun.objects.filter(pk=run.pk).update(status="running", retry_at=None,
                                              retry_reason="", **held)
    send(run, [*restated(message_id=message, text=""), text_start(message),
               text_content(message, WHOLE[:10]), text_content(message, WHOLE[10:]),
               text_end(message)])
    expect(text).to_have_text(WHOLE)
    expect_status(page, run, "Running")
    expect(page.locator("#retry-banner")).to_be_hidden()
    expect(page.locator("#composer-reason")).to_contain_text("The agent is working (running)")
    shot(page, "retry-live-restated", full_page=False)
    # Loaded now, the server renders the same (from the stored events).
    fresh = login_as("owner")
    fresh.goto(f"/c/{run.conversation_id}/")
    expect(fresh.locator(f"#msg-{message} .msg__text")).to_have_text(WHOLE)
    assert statuses(fresh, run) == ("Running", "Running")

    # It fails after all: a second failure of a retried run says so, with its time.
    failed_at = timezone.now()
    AgentRun.objects.filter(pk=run.pk).update(status="failed", error=PLAIN_ERROR,
                                              finished_at=failed_at)
    send(run, [run_error(message=PLAIN_ERROR, code="provider_error")])
    block = page.locator(f"#run-{run.id}")
    expect(block.locator(".run__error")).to_have_text(
        f"The run failed again (attempt 2): {PLAIN_ERROR}")
    expect(block.locator(".run__failed-at")).to_have_text(
        "failed again at " + failed_at.strftime("%H:%M:%S"))
    expect_status(page, run, "Failed")
    shot(page, "retry-live-failed-again", full_page=False)


def test_reviewer_header_says_reviewing(login_as, shot, users):
    run = make_run(users["owner"], AgentRun.Status.FAILED, error=PLAIN_ERROR,
                   finished_at=timezone.now())
    page = login_as("reviewer")
    page.goto(f"/c/{run.conversation_id}/")
    marker = page.locator("#reviewing")
    expect(marker).to_have_text("Reviewing · owner's conversation")
    assert "answer" in marker.get_attribute("title") and "retry" in marker.get_attribute("title")
    expect(page.get_by_text("Read-only")).to_have_count(0)
    expect(page.locator(f"#run-{run.id}").get_by_role("button", name="Retry")).to_be_visible()
    shot(page, "reviewer-header", full_page=False)


def test_a_late_composer_answer_does_not_undo_a_newer_one(login_as, users):
    """The composer is fetched again on every status change; an answer that arrives late
    (the retry's wait, held here) must not replace the newer one (the next attempt)."""
    held = {"lease_owner": "test", "lease_expires_at": timezone.now() + timedelta(hours=1)}
    run = make_run(users["owner"], AgentRun.Status.RUNNING, **held)
    page = login_as("owner")
    page.goto(f"/c/{run.conversation_id}/")
    expect_status(page, run, "Running")
    late = []

    def hold_first(route):
        if late:
            route.continue_()
        else:
            late.append((route, route.fetch()))  # answered now, delivered later

    page.route("**/composer/", hold_first)
    send(run, [run_started(thread_id=run.thread_id, run_id=str(run.id))])
    AgentRun.objects.filter(pk=run.pk).update(
        status="retrying", retries=1, retry_reason=RATE_LIMITED, lease_owner="",
        retry_at=timezone.now() + timedelta(seconds=30))
    run.refresh_from_db()
    send(run, [retrying_event(run, 30)])
    expect_status(page, run, "Retrying")
    page.wait_for_timeout(300)  # the retry's composer request is held (a slow answer)
    assert late
    AgentRun.objects.filter(pk=run.pk).update(status="running", retry_at=None, **held)
    send(run, [*restated(message_id=str(run.assistant_message_id), text=""),
               text_start(str(run.assistant_message_id))])
    expect_status(page, run, "Running")
    page.wait_for_timeout(500)
    route, response = late[0]
    route.fulfill(response=response)  # the old answer ("waiting to retry") arrives last
    page.wait_for_timeout(500)
    expect(page.locator("#composer-reason")).to_contain_text("The agent is working (running)")
    AgentRun.objects.filter(pk=run.pk).update(status="failed", error=PLAIN_ERROR,
                                              finished_at=timezone.now())
    send(run, [text_end(str(run.assistant_message_id)),
               run_error(message=PLAIN_ERROR, code="provider_error")])
    expect_status(page, run, "Failed")


"""The admin queue's layout and chrome in headless Chromium (issue 26, item 6): it fits a
1300 px window with a readable question column, has a favicon, and its decide page is
titled with the right article and names late answers by their question."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

QUEUE = "/admin/hitl/agentinterrupt/"
LONG = ("Approve the quarterly vendor payment batch for the Lisbon office, including the "
        "three invoices that arrived after the cut-off and the disputed freight charge")


@pytest.fixture
def staff(users):
    """The suite's users (login_as logs them in), the reviewer as staff."""
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    return {**users, "alice": users["owner"]}


def test_queue_fits_1300px_with_a_readable_question_column(staff, paused_run, login_as, shot):
    from hitl.models import AgentInterrupt

    rows = paused_run(staff["alice"], ["approval", "review", "input", "select"])
    AgentInterrupt.objects.filter(pk=rows[0].pk).update(
        request={**rows[0].request, "message": LONG})
    page = login_as("reviewer", viewport={"width": 1300, "height": 900})
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.goto(QUEUE)
    expect(page.locator("#result_list tbody tr")).to_have_count(4)
    shot(page, "admin-queue-1300", full_page=False)
    # No sideways scrolling, and the question column gets room to be read.
    assert page.evaluate("document.documentElement.scrollWidth") <= 1300
    width = page.locator("#result_list th.column-question").evaluate(
        "e => e.getBoundingClientRect().width")
    assert width >= 300, width
    cell = page.locator("#result_list td.field-question, #result_list th.field-question").first
    expect(cell).to_contain_text("disputed freight charge")  # not cut off
    # A favicon: the browser finds one, no 404 for /favicon.ico.
    assert page.locator("link[rel=icon]").count() == 1
    assert not [u for u in missing if "favicon" in u], missing


def test_decide_page_title_and_late_answer(staff, paused_run, login_as):
    from execution.lifecycle import interrupts_answer
    from hitl.decide import Answer

    row = paused_run(staff["alice"], ["input"])[0]
    # Without JavaScript: the page does not close its form when someone else answers.
    page = login_as("reviewer", javascript=False, viewport={"width": 1300, "height": 900})
    page.goto(f"{QUEUE}{row.pk}/change/")
    expect(page.locator("#content h1")).to_have_text("Answer a question")
    expect(page.locator(".breadcrumbs")).to_contain_text("Name the release")
    interrupts_answer(actor=staff["alice"], run_id=row.run_id, surface="api", answers=[
        Answer(interrupt_id=row.interrupt_id, payload={"value": "v9"})])
    page.locator("form[data-interrupt-id]").get_by_label("Your answer").fill("v2")
    page.locator("form[data-interrupt-id]").get_by_role("button", name="Send").click()
    said = "“Name the release” was already answered by owner."
    expect(page.get_by_text(said)).to_have_count(1)  # once, and by its question
    expect(page.locator(".messagelist")).to_have_count(0)
    assert row.interrupt_id not in page.locator("#content").inner_text()

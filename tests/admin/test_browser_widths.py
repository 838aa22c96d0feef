"""Issue 35 item 19 in headless Chromium, measured: the admin run page fits a 1300 px
window; a long unbroken question does not widen the approval queue past it (Agent,
Requester and Status stay in view); a 200 kB interrupt value shows clipped behind
"Show all" (a server-rendered <details>: no script) on the admin decide page and the
chat page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from hitl.models import AgentInterrupt
from runs.models import AgentRun, SegmentUsage
from runs.services import audit

QUEUE = "/admin/hitl/agentinterrupt/"
WIDE = {"width": 1300, "height": 900}
UNBROKEN = "https://example.com/reports/" + "Q3VendorPaymentsLisbon" * 100  # ~2.2 kB, no break
BIG = "line of the attached log " * 8000  # 200 kB


@pytest.fixture
def staff(users):
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    return {**users, "alice": users["owner"]}


def overflow(page) -> int:
    """How far the page scrolls sideways (0: it fits its window)."""
    return page.evaluate("document.documentElement.scrollWidth"
                         " - document.documentElement.clientWidth")


def test_admin_run_page_fits_1300px(staff, paused_run, login_as, shot):
    row, other = paused_run(staff["alice"], ["review", "approval"])
    AgentInterrupt.objects.filter(pk=row.pk).update(
        request={**row.request, "message": UNBROKEN})
    # An answered one whose decision holds a long unbroken value too.
    AgentInterrupt.objects.filter(pk=other.pk).update(
        status="decided", decision={"approved": False, "reason": UNBROKEN})
    run = AgentRun.objects.get(pk=row.run_id)
    for before, after in (("", "queued"), ("queued", "running"), ("running", "retrying"),
                          ("retrying", "running"), ("running", "paused")):
        audit(run=run, action="run.status", from_status=before, to_status=after,
              payload={"code": "provider_retry", "detail": UNBROKEN} if after == "retrying"
              else None)
    SegmentUsage.objects.create(run=run, segment=1, model_name="gpt-4o-mini", calls=1,
                                input_tokens=1200, output_tokens=340, total_tokens=1540)
    page = login_as("reviewer", viewport=WIDE)
    page.goto(f"/admin/runs/agentrun/{run.pk}/change/")
    expect(page.locator("#run-timeline")).to_be_visible()
    shot(page, "admin-run-1300")
    assert overflow(page) == 0, overflow(page)


def test_long_unbroken_question_keeps_the_queue_in_its_window(staff, paused_run, login_as,
                                                               shot):
    rows = paused_run(staff["alice"], ["approval", "review", "input"])
    AgentInterrupt.objects.filter(pk=rows[0].pk).update(
        request={**rows[0].request, "message": UNBROKEN})
    page = login_as("reviewer", viewport=WIDE)
    page.goto(QUEUE)
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    shot(page, "admin-queue-unbroken", full_page=False)
    assert overflow(page) == 0, overflow(page)
    for column in ("agent", "requester", "status"):
        right = page.locator(f"#result_list th.column-{column}").evaluate(
            "e => e.getBoundingClientRect().right")
        assert right <= WIDE["width"], (column, right)
    # Cut after 200 characters (wrapped), the whole question line as its title.
    cut = page.locator("#result_list .field-question [title]")
    whole = AgentInterrupt.objects.get(pk=rows[0].pk).message
    assert len(whole) > 200 and cut.get_attribute("title") == whole
    assert cut.inner_text() == UNBROKEN[:200] + " …"


@pytest.mark.parametrize("surface", ["admin", "page"])
def test_a_200kb_value_is_clipped_behind_show_all(staff, paused_run, login_as, shot, surface):
    row = paused_run(staff["alice"], ["approval"])[0]
    AgentInterrupt.objects.filter(pk=row.pk).update(
        request={**row.request, "details": {"log": BIG}})
    if surface == "admin":
        page = login_as("reviewer", viewport=WIDE)
        page.goto(f"{QUEUE}{row.pk}/change/")
    else:
        page = login_as("owner", viewport=WIDE)
        page.goto(f"/c/{row.run.conversation_id}/")
    card = page.locator(f".card[data-interrupt-id='{row.interrupt_id}']")
    expect(card).to_be_visible()
    height = card.evaluate("e => e.getBoundingClientRect().height")
    assert height < 900, height
    more = card.locator("details.value-more")
    expect(more.locator("summary")).to_have_text("Show all (200,000 characters)")
    shot(page, f"value-clipped-{surface}", full_page=False)
    more.locator("summary").click()
    whole = more.locator(".value-all")
    expect(whole).to_be_visible()
    assert len(whole.inner_text()) >= len(BIG.strip())
    # Even open, it scrolls inside a box rather than making the card 70,000 px tall.
    assert card.evaluate("e => e.getBoundingClientRect().height") < 1600
    assert overflow(page) == 0
    # The card can still be answered.
    expect(card.get_by_role("button", name="Approve")).to_be_visible()

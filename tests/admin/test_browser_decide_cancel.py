"""The decide page's Cancel button in headless Chromium (issue 35, item 22): labelled with
what it does, one click (no confirmation), and the page says what happened."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.helpers import pending, start_run, wait_run


def test_reviewer_cancels_a_question_from_the_decide_page(login_as, api, users, shot):
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")  # dev: "What should we call …?"
    item = pending(run)
    page = login_as("reviewer", viewport={"width": 1300, "height": 900})
    page.goto(f"/admin/hitl/agentinterrupt/{item['id']}/change/")
    cancel = page.get_by_role("button", name="Cancel this question")
    expect(cancel).to_be_visible()
    expect(cancel).to_have_attribute("aria-describedby", f"card-{item['interrupt_id']}-cancel-help")
    shot(page, "admin-decide-cancel", element=page.locator(".queue-card"))
    cancel.click()
    expect(page.locator(".messagelist")).to_contain_text("Cancelled: ")
    # dev's helper has no other way on: the graph ends the run on the decline.
    done = wait_run(owner, run["id"], "cancelled")
    assert done["status"] == "cancelled"
    assert owner.get(f"/api/interrupts/{item['id']}/").json()["status"] == "cancelled"

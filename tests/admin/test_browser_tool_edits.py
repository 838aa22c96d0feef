"""Tool approvals in the admin (issue 35 items 2, 9, 12, 13), in headless Chromium: the
queue names each call; a batched edit on the decide page is a form from the tool's stored
schema, refused by the server when a required argument is empty (nothing consumed); an
edit that is abandoned does not block the answer."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.admin.test_browser_formats import QUEUE, open_card, paused, reviewer_page, tools_ran
from tests.helpers import wait_run

__all__ = ["reviewer_page"]  # the fixture, shared


def test_queue_rows_name_each_call(api, reviewer_page, shot):
    owner = api("owner")
    run = paused(owner, "adopter_per_call")
    page = reviewer_page
    page.goto(QUEUE)
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.filter(has_text="Approve send_email(to=alice@example.com, body=hi)")
           ).to_have_count(1)
    expect(rows.filter(has_text="Approve delete_file(path=/tmp/report)")).to_have_count(1)
    expect(rows.filter(has_text="Tool execution requires approval")).to_have_count(0)
    shot(page, "admin-queue-tool-calls-named")
    # The REST list says the same.
    messages = sorted(i["message"] for i in run["pending_interrupts"])
    assert messages == ["Approve delete_file(path=/tmp/report): Deleting a file cannot be "
                        "undone", "Approve send_email(to=alice@example.com, body=hi)"]


def test_batched_edit_on_the_decide_page(api, reviewer_page, shot):
    owner = api("owner")
    run = paused(owner, "adopter_batched")
    item = run["pending_interrupts"][0]
    page = reviewer_page
    form = open_card(page, item)
    rows = form.locator(".tool-row")
    email = rows.nth(0)
    email.get_by_label("Edit the arguments").check()
    body = email.get_by_label("Body", exact=True)
    expect(body).to_have_attribute("required", "")
    expect(email.locator("textarea[data-json-editor]")).to_have_count(0)
    # An abandoned edit (emptied, then Approve chosen again) does not block the answer...
    body.fill("")
    email.get_by_label("Approve").check()
    rows.nth(1).get_by_label("Approve").check()
    # ... but first, an edit that is sent: refused by the server, naming the field.
    email.get_by_label("Edit the arguments").check()
    page.evaluate("document.querySelectorAll('[required]').forEach(e => e.required = false)")
    form.locator("button[type=submit]", has_text="Send these decisions").click()
    form = page.locator(f"form[data-interrupt-id='{item['interrupt_id']}']")
    expect(form).to_contain_text("Body: fill this in")
    shot(page, "admin-decide-batched-edit-refused")
    assert owner.get(f"/api/interrupts/{item['id']}/").json()["status"] == "pending"
    # Back to Approve with the field still empty: the answer goes.
    rows = form.locator(".tool-row")
    rows.nth(0).get_by_label("Approve").check()
    rows.nth(1).get_by_label("Approve").check()
    form.locator("button[type=submit]", has_text="Send these decisions").click()
    page.wait_for_url(f"**{QUEUE}")
    done = wait_run(owner, run["id"], "completed")
    assert sorted(t["name"] for t in tools_ran(done["thread_id"])) == ["delete_file",
                                                                       "send_email"]

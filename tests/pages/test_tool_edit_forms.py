"""Tool-call cards on the chat page, in headless Chromium (issue 35 items 2, 9, 12, 13):
a batched card's edit is a form built from the tool's argument schema (kept with the
question by the worker), checked on the server; an edit that is not being sent never
blocks the answer; a required field left empty is refused, by the browser and by the
server; each card's title names its call."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.pages.test_browser import PENDING, start_chat
from tests.pages.test_browser_formats import TALL, card_of, run_of, tools_ran, wait_done


def drop_required(page: Page) -> None:
    """What a browser that does not check ``required`` would send: the server's turn."""
    page.evaluate("document.querySelectorAll('[required]').forEach(e => e.required = false)")


def send(card) -> None:
    card.locator("button[type=submit]", has_text="Send these decisions").click()


def test_batched_edit_is_a_checked_form(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_batched")
    card = card_of(page, "hitl_request")
    expect(card.locator(".card__title")).to_have_text(
        "Approve 2 tool calls: send_email(to=alice@example.com, body=hi), "
        "delete_file(path=/tmp/report)")
    rows = card.locator(".tool-row")
    email = rows.nth(0)
    email.get_by_label("Edit the arguments").check()
    # Choosing Edit opens it: fields from send_email's schema, not a JSON box.
    to = email.get_by_label("To", exact=True)
    expect(to).to_be_visible()
    expect(to).to_have_attribute("required", "")
    expect(email.locator("textarea[data-json-editor]")).to_have_count(0)
    rows.nth(1).get_by_label("Approve").check()
    to.fill("")
    shot(page, "tool-edit-batched-form", element=card)
    # The browser refuses it (nothing is sent) ...
    send(card)
    expect(to).to_be_focused()
    assert page.evaluate("document.activeElement.validity.valueMissing")
    # ... and so does the server, naming the field, with nothing consumed.
    drop_required(page)
    send(card)
    card = card_of(page, "hitl_request")
    to = card.locator("input[name='edited.0.to']")
    expect(to).to_have_attribute("aria-invalid", "true")
    expect(card).to_contain_text("To: fill this in")
    shot(page, "tool-edit-batched-refused", element=card)
    assert run_of(page).status == "paused"
    # Filled in, Enter: the edit is sent (not the form's first button, "Approve all").
    to.fill("bob@example.com")
    to.press("Enter")
    run = wait_done(page)
    assert sorted(tools_ran(run.thread_id), key=lambda t: t["name"]) == [
        {"name": "delete_file", "args": {"path": "/tmp/report"}},
        {"name": "send_email", "args": {"to": "bob@example.com", "body": "hi"}}]


def test_abandoned_edit_does_not_block_the_answer(login_as, shot):
    """Item 9: Edit on one call, `{bad` typed, both rows back to Approve: the answer goes."""
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_batched_by_hand")
    card = card_of(page, "hitl_request")
    rows = card.locator(".tool-row")
    email = rows.nth(0)
    # No schema is known for these tools: a JSON editor, and the card says why.
    email.get_by_label("Edit the arguments").check()
    editor = email.locator("textarea[name='edited_json.0']")
    expect(editor).to_be_visible()
    expect(email).to_contain_text("argument schema is not known")
    editor.fill("{bad")
    rows.nth(1).get_by_label("Approve").check()
    send(card)  # the edit is being sent: refused in the browser
    expect(editor).to_be_focused()
    shot(page, "tool-edit-json-refused", element=card)
    email.get_by_label("Approve").check()
    send(card)
    run = wait_done(page)
    assert run.result == {"received": {"decisions": [{"type": "approve"}] * 2}}

    # "Approve all" with an abandoned bad edit too.
    start_chat(page, "adopter_batched_by_hand")
    card = card_of(page, "hitl_request")
    email = card.locator(".tool-row").nth(0)
    email.get_by_label("Edit the arguments").check()
    email.locator("textarea[name='edited_json.0']").fill("{bad")
    email.get_by_label("Reject").check()
    card.locator("button[name=all]").click()
    run = wait_done(page)
    assert run.result == {"received": {"decisions": [{"type": "approve"}] * 2}}


def test_per_call_titles_and_required_edit(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_per_call")
    cards = card_of(page, "tool_approval")
    expect(cards).to_have_count(2)
    titles = sorted(cards.locator(".card__title").all_inner_texts())
    assert titles == [
        "Approve delete_file(path=/tmp/report): Deleting a file cannot be undone",
        "Approve send_email(to=alice@example.com, body=hi)"], titles
    email = cards.filter(has_text="send_email")
    email.locator("summary", has_text="Edit the arguments").click()
    to = email.get_by_label("To", exact=True)
    expect(to).to_have_attribute("required", "")
    to.fill("")
    email.locator("button[value=edit]").click()
    expect(to).to_be_focused()  # the browser's refusal
    drop_required(page)
    email.locator("button[value=edit]").click()
    email = page.locator(f"{PENDING}.card--tool_approval", has_text="send_email")
    expect(email).to_contain_text("To: fill this in")
    shot(page, "tool-edit-per-call-refused", element=email)
    # An emptied field in an edit nobody sends does not block Approve.
    email.locator("input[name='edited.to']").fill("")
    email.locator("button[value=approve]").click()
    expect(page.locator(f"{PENDING}.card--tool_approval")).to_have_count(1)
    page.locator(f"{PENDING}.card--tool_approval button[value=approve]").click()
    run = wait_done(page)
    assert sorted(t["name"] for t in tools_ran(run.thread_id)) == ["delete_file", "send_email"]


def test_required_text_of_a_schema_form(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_typed")
    card = card_of(page, "schema_form")
    destination = card.get_by_label("Destination")
    expect(destination).to_have_attribute("required", "")
    card.get_by_label("Nights").fill("2")
    drop_required(page)
    card.locator("button[type=submit]").click()
    card = card_of(page, "schema_form")
    expect(card).to_contain_text("Destination: fill this in")
    shot(page, "schema-form-required-refused", element=card)
    assert run_of(page).status == "paused"
    card.get_by_label("Destination").fill("Oslo")
    card.locator("button[type=submit]").click()
    assert wait_done(page).result == {"received": {"type": "Trip", "data": {
        "destination": "Oslo", "nights": 2, "smoking": False}}}

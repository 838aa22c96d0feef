"""Every interrupt format's card on the chat page, in headless Chromium, answered the way a
person would, against agents written as LangChain / LangGraph users write them
(tests/adopter_agents.py): each test checks what the graph received (the run's result)
or which tools ran.

``AGENTSITE_DOC_SHOTS=1`` also saves each card as docs/img/card-<format>.png (the agents
guide's screenshots)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.pages.test_browser import PENDING, start_chat

# Tall enough that a whole card sits above the chat's composer in its screenshot.
TALL = {"width": 900, "height": 1600}
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


def doc_shot(shot, page: Page, card, name: str) -> None:
    """A screenshot of one card: tests/artifacts/, and docs/img/ when asked for."""
    shot(page, name, element=card)
    if os.environ.get("AGENTSITE_DOC_SHOTS"):
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        card.screenshot(path=str(DOCS_IMG / f"{name}.png"))


def card_of(page: Page, kind: str):
    card = page.locator(f"{PENDING}.card--{kind}")
    expect(card.first).to_be_visible()
    return card


def run_of(page: Page):
    from runs.models import AgentRun

    conversation = page.url.split("#")[0].rstrip("/").split("/")[-1]
    return AgentRun.objects.filter(conversation_id=conversation).order_by("-created_at").first()


def wait_done(page: Page, status: str = "Completed"):
    expect(page.locator("#run-status")).to_contain_text(status)
    return run_of(page)


def tools_ran(thread_id: str) -> list[dict]:
    from tests.adopter_agents import redis_client, tools_key

    return [json.loads(x) for x in redis_client.lrange(tools_key(thread_id), 0, -1)]


def test_batched_tool_calls_card(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_batched")
    card = card_of(page, "hitl_request")
    rows = card.locator(".tool-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("send_email")
    expect(rows.nth(0)).to_contain_text("alice@example.com")
    expect(rows.nth(1)).to_contain_text("Deleting a file cannot be undone")
    # Only the decisions each review config allows.
    expect(rows.nth(0).locator("input[type=radio]")).to_have_count(4)
    expect(rows.nth(1).locator("input[type=radio]")).to_have_count(2)
    doc_shot(shot, page, card, "card-hitl_request")
    # A response needs its text: refused, the focus goes to that row's message.
    rows.nth(0).get_by_label("Respond instead of running it").check()
    rows.nth(1).get_by_label("Approve").check()
    card.locator("button[type=submit]", has_text="Send these decisions").click()
    card = card_of(page, "hitl_request")
    message = card.locator("textarea[name='message.0']")
    expect(message).to_be_focused()
    expect(message).to_have_attribute("aria-invalid", "true")
    # Edit the first call's arguments, reject the second with a reason.
    rows = card.locator(".tool-row")
    rows.nth(0).get_by_label("Edit the arguments").check()  # opens the edit
    rows.nth(0).get_by_label("To", exact=True).fill("bob@example.com")
    rows.nth(1).get_by_label("Reject").check()
    rows.nth(1).locator("summary", has_text="Reject").click()
    rows.nth(1).locator("textarea[name='message.1']").fill("keep the report")
    card.locator("button[type=submit]", has_text="Send these decisions").click()
    run = wait_done(page)
    assert tools_ran(run.thread_id) == [{"name": "send_email",
                                         "args": {"to": "bob@example.com", "body": "hi"}}]
    answered = page.locator(".card--hitl_request")
    expect(answered).to_contain_text("send_email: Approved with edits")
    expect(answered).to_contain_text("delete_file: Rejected: keep the report")


def test_per_call_tool_approval_cards(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_per_call")
    cards = card_of(page, "tool_approval")
    expect(cards).to_have_count(2)
    email = cards.filter(has_text="send_email")
    delete = cards.filter(has_text="delete_file")
    doc_shot(shot, page, delete, "card-tool_approval")
    # delete_file allows approve / reject only.
    expect(delete.locator("button[value=edit], button[value=respond]")).to_have_count(0)
    delete.locator("summary", has_text="Reject").click()
    delete.get_by_label("Reason (optional)").fill("not now")
    delete.locator("button[value=reject]").click()
    expect(page.locator(f"{PENDING}.card--tool_approval")).to_have_count(1)
    # The edit form is generated from the tool's argument schema.
    email = page.locator(f"{PENDING}.card--tool_approval")
    email.locator("summary", has_text="Edit the arguments").click()
    email.get_by_label("To", exact=True).fill("bob@example.com")
    doc_shot(shot, page, email, "card-tool_approval-edit")
    email.locator("button[value=edit]").click()
    run = wait_done(page)
    assert tools_ran(run.thread_id) == [{"name": "send_email",
                                         "args": {"to": "bob@example.com", "body": "hi"}}]


def test_plain_string_card(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_string")
    card = card_of(page, "generic")
    expect(card.locator(".card__title")).to_have_text("Which mission flies next?")
    doc_shot(shot, page, card, "card-generic")
    card.get_by_label("Your answer").fill("Apollo")
    card.locator("button[type=submit]", has_text="Send").click()
    assert wait_done(page).result == {"received": "Apollo"}


def test_question_with_options_card(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_options")
    card = card_of(page, "generic")
    expect(card.locator("button[name=option]")).to_have_count(3)
    doc_shot(shot, page, card, "card-generic-options")
    card.locator("button[name=option]", has_text="green").click()
    assert wait_done(page).result == {"received": "green"}


def test_response_schema_form_card(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_typed")
    card = card_of(page, "schema_form")
    expect(card.locator(".card__title")).to_have_text("Where to?")
    doc_shot(shot, page, card, "card-schema_form")
    card.get_by_label("Destination").fill("Lisbon")
    card.locator("button[type=submit]").click()
    # Nights is required: the browser refuses it first (the field says `required`) ...
    expect(card.get_by_label("Nights")).to_be_focused()
    # ... and the server too, in plain words, with the focus on it.
    page.evaluate("document.querySelectorAll('[required]').forEach(e => e.required = false)")
    card.locator("button[type=submit]").click()
    card = card_of(page, "schema_form")
    nights = card.get_by_label("Nights")
    expect(nights).to_be_focused()
    expect(card.locator(".field-errors")).to_contain_text("Nights: fill this in")
    nights.fill("3")
    card.get_by_label("Smoking").check()
    card.locator("button[type=submit]").click()
    assert wait_done(page).result == {"received": {"type": "Trip", "data": {
        "destination": "Lisbon", "nights": 3, "smoking": True}}}


def test_agent_inbox_card(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_inbox")
    card = card_of(page, "agent_inbox")
    expect(card).to_contain_text("publish_post")
    for label in ("Accept", "Save edits", "Send response", "Ignore"):
        expect(card.locator("button", has_text=label)).to_have_count(1)
    doc_shot(shot, page, card, "card-agent_inbox")
    card.locator("summary", has_text="Edit the arguments").click()
    card.locator("textarea[name=edited_json]").fill('{"title": "Hello world"}')
    card.locator("button[value=edit]").click()
    assert wait_done(page).result == {"received": {
        "type": "edit", "args": {"action": "publish_post", "args": {"title": "Hello world"}}}}


def _reload_until(page: Page, selector: str) -> None:
    for _ in range(150):
        if page.locator(selector).count():
            return
        page.wait_for_timeout(200)
        page.reload()
    raise AssertionError(f"{selector} never appeared")


def test_formats_without_javascript(login_as):
    page = login_as("owner", javascript=False)
    start_chat(page, "adopter_batched")
    _reload_until(page, f"{PENDING}.card--hitl_request")
    page.locator(f"{PENDING}.card--hitl_request button[name=all]").click()
    _reload_until(page, ".run[data-status=completed]")
    assert sorted(t["name"] for t in tools_ran(run_of(page).thread_id)) == ["delete_file",
                                                                            "send_email"]
    start_chat(page, "adopter_string")
    _reload_until(page, f"{PENDING}.card--generic")
    card = page.locator(f"{PENDING}.card--generic")
    card.get_by_label("Your answer").fill('{"n": [1, 2]}')
    card.get_by_label("JSON (a number, true, a list, an object…)").check()
    card.locator("button[type=submit]", has_text="Send").click()
    _reload_until(page, ".run[data-status=completed]")
    assert run_of(page).result == {"received": {"n": [1, 2]}}

"""The chat pages in real headless Chromium against the live server and worker."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

PENDING = ".card[data-status=pending]"


def start_chat(page: Page, agent: str, **fields: str) -> str:
    page.goto(f"/new/{agent}/")
    for name, value in fields.items():
        page.fill(f"#input-{name}", value)
    page.click("#new-chat-form button[type=submit]")
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    return page.url


def pending_card(page: Page, kind: str):
    card = page.locator(f"{PENDING}.card--{kind}")
    expect(card).to_be_visible()
    return card


def test_dev_end_to_end_by_clicking(login_as, shot):
    page = login_as("owner")
    page.click("text=New chat")
    page.click(".agent-list >> text=dev")
    expect(page.get_by_role("heading", name="dev v1")).to_be_visible()
    start_chat(page, "dev", topic="Rocket")

    card = pending_card(page, "input")
    expect(card.locator("input[name=value]")).to_have_attribute("placeholder", "e.g. Apollo")
    expect(page.locator("#composer-input")).to_be_disabled()
    expect(page.locator("#composer-reason")).to_contain_text("Answer the question")
    shot(page, "card-input", element=card)
    card.locator("input[name=value]").fill("Apollo")
    card.locator("button[type=submit]").click()

    card = pending_card(page, "select")
    shot(page, "card-select", element=card)
    card.locator("label", has_text="Blue").click()
    card.locator("button[type=submit]").click()

    card = pending_card(page, "multiSelect")
    shot(page, "card-multiSelect", element=card)
    card.locator("label", has_text="Logging").click()
    card.locator("label", has_text="Metrics").click()
    card.locator("button[type=submit]").click()

    card = pending_card(page, "approval")
    shot(page, "card-approval", element=card)
    card.locator("button[value=approve]").click()

    expect(page.locator("#run-status")).to_contain_text("Completed")
    message = page.locator(".msg--assistant .prose").last
    expect(message).to_contain_text("Summary for Rocket")
    expect(message.locator("strong")).to_have_text("Apollo")
    expect(page.locator(".card[data-status=applied]")).to_have_count(4)
    expect(page.locator("#composer-input")).to_be_enabled()
    shot(page, "chat-completed", full_page=False)


def card_ids(page: Page) -> list[str]:
    return page.locator(PENDING).evaluate_all("cards => cards.map(c => c.dataset.interruptId)")


def test_showcase_every_kind_through_its_card(login_as, shot):
    page = login_as("owner")
    start_chat(page, "showcase")

    card = pending_card(page, "input")
    card.locator("input[name=value]").fill("v2.0")
    card.locator("button[type=submit]").click()

    card = pending_card(page, "select")
    card.locator("label", has_text="beta").click()
    card.locator("button[type=submit]").click()

    card = pending_card(page, "multiSelect")
    submit = card.locator("button[type=submit]")
    expect(submit).to_be_disabled()  # min 1: nothing chosen yet
    card.locator("label", has_text="linux").click()
    card.locator("label", has_text="macos").click()
    expect(card.locator("input[value=windows]")).to_be_disabled()  # max 2 reached
    submit.click()

    card = pending_card(page, "modal")
    expect(card.locator("dialog")).to_be_visible()
    expect(card.locator(".card__title")).to_have_text("Heads up")  # once: no second heading
    expect(card.locator("dialog h4")).to_have_count(0)
    shot(page, "card-modal", element=card)
    card.locator("button", has_text="Continue").click()

    card = pending_card(page, "unlock")
    expect(card).to_contain_text("signing-key")
    shot(page, "card-unlock", element=card)
    card.locator("button[value=unlock]").click()

    card = pending_card(page, "review")
    expect(card.locator(".card__proposal")).to_contain_text("publish")
    expect(card.locator("button[value=respond]")).to_have_count(0)  # not allowed here
    shot(page, "card-review", element=card)
    card.scroll_into_view_if_needed()
    shot(page, "chat-review", full_page=False)
    card.locator("summary", has_text="Edit the proposal").click()
    card.locator("textarea[name='edited.steps']").fill("")
    card.locator("button[value=edit]").click()
    # The server's schema check comes back on the card, which stays pending.
    card = page.locator(f"{PENDING}.card--review")
    expect(card.locator(".errors")).to_contain_text("Steps: add at least one step")
    shot(page, "card-review-error", element=card)
    card.locator("input[name='edited.title']").fill("Release 2")
    card.locator("textarea[name='edited.steps']").fill("build\ntest\nship")
    card.locator("button[value=edit]").click()

    card = pending_card(page, "approval")
    expect(card.locator(".card__details")).to_contain_text("Release 2")
    card.locator("button[value=approve]").click()

    expect(page.locator("#run-status")).to_contain_text("Completed")
    review = page.locator(".card--review")
    expect(review).to_contain_text("Approved with edits")
    from runs.models import AgentRun

    run = AgentRun.objects.get()
    assert run.result["plan"] == {"title": "Release 2", "steps": ["build", "test", "ship"]}


def test_approvals_two_cards_at_once(login_as, shot):
    page = login_as("owner")
    start_chat(page, "approvals")
    expect(page.locator(f"{PENDING}.card--approval")).to_have_count(2)
    shot(page, "cards-two-approvals", full_page=False)
    first, second = page.locator(f"{PENDING}.card--approval").all()
    first.locator("button[value=approve]").click()
    expect(page.locator(f"{PENDING}.card--approval")).to_have_count(1)
    expect(page.locator("#run-status")).to_contain_text("Paused")
    page.locator(f"{PENDING}.card--approval").locator("button[value=approve]").click()
    expect(page.locator("#run-status")).to_contain_text("Completed")
    from runs.models import AgentRun

    run = AgentRun.objects.get()
    assert run.status == "completed"
    assert run.segments == 2  # started once, resumed once: when both were answered


def test_reload_while_running_and_while_paused(login_as):
    page = login_as("owner")
    start_chat(page, "tasklist", doc="docs://versions/v1.0.md")
    page.reload()  # straight after the start: the run is queued or running
    pending_card(page, "review")
    message = page.locator(".run[data-status=paused] .msg--assistant .prose")
    expect(message).to_contain_text("scope items")
    text = message.inner_text()
    ids = card_ids(page)
    assert len(ids) == 1
    page.reload()
    expect(page.locator(PENDING)).to_have_count(1)
    assert card_ids(page) == ids
    assert page.locator(".run[data-status=paused] .msg--assistant .prose").inner_text() == text


def test_two_pages_see_an_answer(login_as):
    owner = login_as("owner")
    url = start_chat(owner, "approvals")
    expect(owner.locator(PENDING)).to_have_count(2)
    reviewer = login_as("reviewer")
    reviewer.goto(url)
    expect(reviewer.locator(PENDING)).to_have_count(2)
    expect(reviewer.locator("#composer")).to_have_count(0)  # read-only for a reviewer
    target = card_ids(owner)[0]
    owner.locator(f".card[data-interrupt-id='{target}'] button[value=approve]").click()
    expect(reviewer.locator(f".card[data-interrupt-id='{target}']")).to_have_attribute(
        "data-status", "decided")
    expect(reviewer.locator(f".card[data-interrupt-id='{target}']")).to_contain_text("owner")
    # The reviewer answers the other card from their page.
    other = [i for i in card_ids(reviewer) if i != target][0]
    reviewer.locator(f".card[data-interrupt-id='{other}'] button[value=approve]").click()
    expect(owner.locator("#run-status")).to_contain_text("Completed")


def _wait_for(page: Page, selector: str, timeout: float = 30) -> None:
    """Without JavaScript the page does not update itself: reload until it shows up."""
    deadline = time.monotonic() + timeout
    while page.locator(selector).count() == 0:
        assert time.monotonic() < deadline, f"{selector} never appeared"
        time.sleep(0.2)
        page.reload()


def test_dev_flow_without_javascript(login_as):
    page = login_as("owner", javascript=False)
    start_chat(page, "dev", topic="Plain")
    _wait_for(page, f"{PENDING}.card--input")
    card = page.locator(f"{PENDING}.card--input")
    card.locator("input[name=value]").fill("Hermes")
    card.locator("button[type=submit]").click()
    assert "/c/" in page.url
    _wait_for(page, f"{PENDING}.card--select")
    page.locator(f"{PENDING}.card--select label", has_text="Green").click()
    page.locator(f"{PENDING}.card--select button[type=submit]").click()
    _wait_for(page, f"{PENDING}.card--multiSelect")
    page.locator(f"{PENDING}.card--multiSelect label", has_text="Alerts").click()
    page.locator(f"{PENDING}.card--multiSelect button[type=submit]").click()
    _wait_for(page, f"{PENDING}.card--approval")
    page.locator(f"{PENDING}.card--approval summary").click()
    page.locator(f"{PENDING}.card--approval textarea[name=reason]").fill("not now")
    page.locator(f"{PENDING}.card--approval button[value=reject]").click()
    _wait_for(page, ".run[data-status=rejected]")
    expect(page.locator(".card--approval")).to_contain_text("Rejected: not now")
    expect(page.locator(".msg--assistant .prose")).to_contain_text("Summary for Plain")


@pytest.mark.agui_unchecked  # the agent's run below is written directly, without events
def test_xss_renders_inert(login_as, users):
    from runs.models import AgentRun, Conversation, Message

    page = login_as("owner")
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    evil = "<img src=x onerror=alert(1)>"
    page.goto("/new/dev/")
    page.fill("#input-message", evil)
    page.click("#new-chat-form button[type=submit]")
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    expect(page.locator(".msg--user .msg__text")).to_have_text(evil)
    pending_card(page, "input")
    assert page.locator("#transcript img").count() == 0

    conversation = Conversation.objects.create(owner=users["owner"], agent="dev",
                                               title="<b>bold</b> title")
    run = AgentRun.objects.create(owner=users["owner"], conversation=conversation, agent="dev",
                                  agent_version="1", thread_id=str(conversation.id),
                                  status="completed", result={"note": evil})
    Message.objects.create(conversation=conversation, run=run, role="assistant", content=(
        "Done. [click me](javascript:alert(2)) and <script>alert(3)</script> "
        "<a href=\"javascript:alert(4)\">raw</a> [ok](https://example.com)"))
    page.goto(f"/c/{conversation.id}/")
    prose = page.locator(".msg--assistant .prose")
    expect(prose).to_contain_text("click me")
    assert prose.locator("a[href^='javascript']").count() == 0
    assert prose.locator("a[href='https://example.com']").count() == 1
    assert page.locator("#transcript script, #transcript img, .chat__title b").count() == 0
    page.locator(".run__result summary").click()
    expect(page.locator(".run__result")).to_contain_text(evil)
    prose.get_by_text("click me").click()  # plain text now: nothing happens
    expect(page).to_have_url(re.compile(f"/c/{conversation.id}/$"))
    assert dialogs == []


def test_outsider_404_and_anonymous_login(login_as, browser, live):
    owner = login_as("owner")
    url = start_chat(owner, "approvals")
    outsider = login_as("outsider")
    response = outsider.goto(url)
    assert response.status == 404
    expect(outsider.locator("h1")).to_have_text("Not found")
    anonymous = browser.new_context(base_url=live["base_url"]).new_page()
    anonymous.goto(url)
    assert "/accounts/login/" in anonymous.url
    expect(anonymous.locator("h1")).to_have_text("Sign in")
    anonymous.context.close()


def test_select_card_by_keyboard_only(login_as):
    page = login_as("owner")
    start_chat(page, "dev")
    card = pending_card(page, "input")
    card.locator("input[name=value]").focus()
    page.keyboard.type("Keys")
    page.keyboard.press("Enter")
    card = pending_card(page, "select")
    expect(card).to_be_focused()  # focus moves to the new card
    page.keyboard.press("Tab")  # into the radio group: the first option
    page.keyboard.press("ArrowDown")  # the second option, checked
    expect(card.locator("input[value=green]")).to_be_checked()
    page.keyboard.press("Tab")  # the submit button
    expect(card.locator("button[type=submit]")).to_be_focused()
    page.keyboard.press("Enter")
    pending_card(page, "multiSelect")
    from hitl.models import AgentInterrupt

    assert AgentInterrupt.objects.get(kind="select").decision == {"value": "green"}


def test_phone_width_and_dark_scheme(login_as, shot):
    page = login_as("owner", viewport={"width": 390, "height": 844}, color_scheme="dark")
    start_chat(page, "showcase")
    card = pending_card(page, "input")
    card.locator("input[name=value]").fill("v3")
    card.locator("button[type=submit]").click()
    pending_card(page, "select")
    # Nothing wider than the phone: no sideways scrolling.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(15, 18, 22)"  # the dark palette
    shot(page, "phone-dark", full_page=False)
    page.goto("/")
    expect(page.locator("[data-needs-answer]")).to_be_visible()
    shot(page, "phone-dark-list", full_page=False)


def test_tool_calls_as_chips_and_markdown_answer(login_as, shot):
    page = login_as("owner")
    page.goto("/new/assistant/")
    page.fill("#input-message", "Where do I download my invoices?")
    page.click("#new-chat-form button[type=submit]")
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    expect(page.locator("#run-status")).to_contain_text("Completed")
    chip = page.locator(".chip", has_text="kb_search")
    expect(chip).to_be_visible()
    chip.locator("summary").click()
    expect(chip.locator(".chip__result")).not_to_have_text("…")
    expect(page.locator(".msg--assistant .prose strong").first).to_have_text(
        "Billing and invoices")
    shot(page, "chat-tool-chips", full_page=False)
    page.reload()  # chips come back from the run's stored events
    expect(page.locator(".chip", has_text="kb_search")).to_be_visible()


def test_run_error_shows_once_on_the_run(login_as, shot):
    page = login_as("owner")
    start_chat(page, "faulty")
    card = pending_card(page, "input")
    card.locator("input[name=value]").fill("go")
    card.locator("button[type=submit]").click()
    expect(page.locator("#run-status")).to_contain_text("Failed")
    expect(page.locator(".run__error")).to_contain_text("boom")
    # Once: on the run, not in a header notice as well.
    expect(page.locator("[role=alert]", has_text="boom")).to_have_count(1)
    shot(page, "chat-run-error-once", full_page=False)
    expect(page.locator("#composer-input")).to_be_enabled()

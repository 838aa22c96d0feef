"""What a person sees on the chat page after answering cards (issue 35, items 10, 11, 20,
21, 22), in headless Chromium against adopter agents (tests/adopter_agents.py):

- the focus moves on to the next pending card after an answer is taken, both when the
  card is answered here (htmx) and when it is answered elsewhere (the live refresh);
- a rejected tool call's chip has no ✓, an edited one shows the arguments it ran with;
- a form field the input guard refuses is said inside the card, which keeps its form;
- each card has a labelled Cancel button; card titles render `code` and **bold**;
- the status pill keeps the space in "Running · <step>".
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.pages.test_browser import PENDING, start_chat
from tests.pages.test_browser_formats import TALL, run_of, tools_ran, wait_done

CARD = f"{PENDING}.card--tool_approval"


def _focused_card(page: Page) -> str:
    """The interrupt id of the card that has the focus (itself, not a control in it)."""
    return page.evaluate("() => document.activeElement.matches('.card') ?"
                         " document.activeElement.dataset.interruptId : ''")


def test_answer_moves_focus_to_the_next_pending_card_and_chips_tell_what_ran(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_per_call")
    cards = page.locator(CARD)
    expect(cards).to_have_count(2)
    delete = cards.filter(has_text="delete_file")
    email_id = cards.filter(has_text="send_email").get_attribute("data-interrupt-id")
    cancel = delete.locator("button[name=_status][value=cancelled]")
    expect(cancel).to_have_text("Cancel this question")
    shot(page, "card-cancel-button", element=delete)

    # Answered here (htmx): the focus goes on to the other card, not to <body>.
    delete.locator("summary", has_text="Reject").click()
    delete.get_by_label("Reason (optional)").fill("not now")
    delete.locator("button[value=reject]").click()
    expect(page.locator(CARD)).to_have_count(1)
    page.wait_for_function(f"() => document.activeElement.dataset.interruptId === '{email_id}'")
    shot(page, "focus-after-htmx-answer")
    page.keyboard.press("Tab")  # the next Tab lands inside that card, not at the page's top
    assert page.evaluate("() => !!document.activeElement.closest("
                         f"'[data-interrupt-id=\"{email_id}\"]')")

    email = page.locator(CARD)
    email.locator("summary", has_text="Edit the arguments").click()
    email.get_by_label("To", exact=True).fill("bob@example.com")
    email.locator("button[value=edit]").click()
    run = wait_done(page)
    assert tools_ran(run.thread_id) == [{"name": "send_email",
                                         "args": {"to": "bob@example.com", "body": "hi"}}]
    # The chips: the rejected call did not run (no ✓); the edited one ran with bob.
    page.reload()
    chips = page.locator(".chip")
    rejected = chips.filter(has_text="delete_file")
    expect(rejected).to_have_class("chip chip--not-run")
    expect(rejected.locator("summary")).to_contain_text("rejected, not run")
    sent = chips.filter(has_text="send_email")
    expect(sent).to_have_class("chip chip--done")
    sent.locator("summary").click()
    rejected.locator("summary").click()
    expect(sent.locator(".chip__args")).to_contain_text("bob@example.com")
    expect(sent.locator(".chip__asked")).to_contain_text("alice@example.com")
    shot(page, "chips-rejected-and-edited", element=page.locator(".tools").last)


def test_answered_elsewhere_the_focus_moves_on_too(login_as, api):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_per_call")
    cards = page.locator(CARD)
    expect(cards).to_have_count(2)
    first, second = (cards.nth(i).get_attribute("data-interrupt-id") for i in (0, 1))
    page.locator(f'[data-interrupt-id="{first}"] button[type=submit]').first.focus()
    run = run_of(page)
    r = api("reviewer").post(f"/api/runs/{run.id}/resume/", json={
        "interrupt_id": first, "payload": {"type": "reject", "message": "elsewhere"}})
    assert r.status_code == 202, r.text
    expect(page.locator(f'.card[data-interrupt-id="{first}"]')).not_to_have_attribute(
        "data-status", "pending")
    page.wait_for_function(f"() => document.activeElement.dataset.interruptId === '{second}'")
    assert _focused_card(page) == second


def test_a_refused_field_is_said_in_the_card_which_keeps_its_form(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "dev", topic="Guard")
    card = page.locator(f"{PENDING}.card--input")
    expect(card).to_be_visible()
    field = card.locator("input[name=value]")
    field.evaluate("e => { e.value = 'a\\u0000b'; }")
    card.locator("button[type=submit]").first.click()
    alert = card.locator(".card__refused [role=alert]")
    expect(alert).to_contain_text("Nothing was saved: the field value")
    expect(alert).to_contain_text("NUL")
    expect(alert).to_be_focused()
    expect(card.locator("form")).to_be_visible()  # still answerable, nothing recorded
    assert card.get_attribute("data-status") == "pending"
    shot(page, "card-guard-refusal", element=card)
    # Put right, it is answered.
    field.fill("Apollo")
    card.locator("button[type=submit]").first.click()
    expect(page.locator(f"{PENDING}.card--select")).to_be_visible()


def _paused_with(owner, request) -> str:
    """A paused showcase run of ``owner``'s asking ``request`` (rows as the worker
    writes them); its chat page's path."""
    from hitl.models import AgentInterrupt
    from runs import registry
    from runs.models import AgentRun, Conversation, Message

    conversation = Conversation.objects.create(owner=owner, agent="showcase", title="t")
    Message.objects.create(conversation=conversation, role="user", content="hi")
    run = AgentRun.objects.create(owner=owner, conversation=conversation,
                                  agent="showcase",
                                  agent_version=registry.get("showcase").version,
                                  thread_id=str(conversation.id),
                                  status=AgentRun.Status.PAUSED, segments=1)
    AgentInterrupt.objects.create(run=run, interrupt_id="md-title", kind="generic",
                                  request=request)
    return f"/c/{conversation.pk}/"


def test_titles_render_inline_markdown_and_the_step_keeps_its_space(login_as, users, shot):
    page = login_as("owner", viewport=TALL)
    page.goto(_paused_with(users["owner"], {
        "question": "Deploy `main` to **production** or <b>staging</b>?",
        "options": ["production", "staging", "neither"]}))
    card = page.locator(f"{PENDING}.card--generic")
    title = card.locator(".card__title")
    expect(title.locator("code")).to_have_text("main")
    expect(title.locator("strong")).to_have_text("production")
    expect(title).to_contain_text("<b>staging</b>")  # HTML stays text
    # No option is styled as the default; the typed answer's Send is, and Enter in the
    # answer field sends what was typed, not the first option.
    expect(card.locator("button[name=option].btn--primary")).to_have_count(0)
    expect(card.locator(".actions").get_by_role("button", name="Send")).to_have_class(
        "btn btn--primary")
    expect(card.get_by_role("button", name="Cancel the run")).to_be_visible()
    shot(page, "card-generic-options-markdown", element=card)
    # The status pill with a step: "Running · agent", its space kept.
    page.evaluate("""() => {
        document.querySelector('#run-status .status__label').textContent = 'Running';
        document.getElementById('run-step').textContent = ' · agent';
    }""")
    # (As rendered: a flex item drops a leading space unless told to keep it.)
    assert page.locator("#run-step").inner_text() == " · agent"
    card.get_by_label("Your answer").fill("canary")
    card.get_by_label("text", exact=True).press("Enter")  # a radio: Enter submits the form
    answered = page.locator('.card[data-interrupt-id="md-title"]')
    expect(answered).to_have_attribute("data-status", re.compile("decided|applied"))
    expect(answered.locator(".card__summary")).to_have_text("canary")


def test_a_failed_runs_answer_says_the_agent_received_it(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "faulty")
    card = page.locator(f"{PENDING}.card--input")
    card.locator("input[name=value]").fill("go")
    card.locator("button[type=submit]").click()
    expect(page.locator("#run-status")).to_contain_text("Failed")
    page.reload()
    answered = page.locator(".card--input")
    expect(answered).to_contain_text("Answered by owner")
    expect(answered).to_contain_text("The run failed after the agent received this answer")
    expect(answered).not_to_contain_text("ended before the agent used")
    expect(page.locator(".run__error")).to_contain_text("boom after 'go'")
    shot(page, "card-failed-run-answer", element=page.locator(".run").last)

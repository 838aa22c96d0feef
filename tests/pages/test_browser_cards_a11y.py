"""What a first-time reviewer hit on the cards (issue 26, item 6), in headless Chromium:
focus and errors after a refused answer, the modal, late answers, no-JavaScript pages,
the chat header."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from tests.pages.test_browser import PENDING, pending_card, start_chat


def _described_by(page: Page, locator) -> str:
    ids = (locator.get_attribute("aria-describedby") or "").split()
    return " ".join(page.locator(f"#{i}").inner_text() for i in ids)


def _to_review(page: Page) -> None:
    start_chat(page, "showcase")
    card = pending_card(page, "input")
    card.locator("input[name=value]").fill("v2.0")
    card.locator("button[type=submit]").click()
    card = pending_card(page, "select")
    card.locator("label", has_text="beta").click()
    card.locator("button[type=submit]").click()
    card = pending_card(page, "multiSelect")
    card.locator("label", has_text="linux").click()
    card.locator("button[type=submit]").click()


def test_refused_edit_focuses_the_field_with_plain_words(login_as, shot):
    page = login_as("owner")
    _to_review(page)
    card = pending_card(page, "modal")
    dialog = card.locator("dialog")
    # The title once: the card's heading; the dialog is labelled by it.
    expect(card.get_by_text("Heads up", exact=True)).to_have_count(1)
    expect(dialog).to_have_attribute("aria-labelledby", re.compile(r"-title$"))
    # Focus stays inside the open dialog: Tab from the last action wraps to the first.
    buttons = dialog.locator("button")
    buttons.last.focus()
    page.keyboard.press("Tab")
    expect(buttons.first).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(buttons.last).to_be_focused()
    shot(page, "card-modal-focus", element=card)
    buttons.first.click()

    card = pending_card(page, "unlock")
    card.locator("button[value=unlock]").click()
    card = pending_card(page, "review")
    card.locator("summary", has_text="Edit the proposal").click()
    # The schema's order (title, then steps), whatever order jsonb stored its keys in.
    labels = card.locator(".review-edit .field > label").all_inner_texts()
    assert [t.split(" (")[0] for t in labels] == ["Title", "Steps"]
    card.locator("textarea[name='edited.steps']").fill("")
    card.locator("button[value=edit]").click()
    card = page.locator(f"{PENDING}.card--review")
    steps = card.locator("textarea[name='edited.steps']")
    expect(steps).to_be_focused()
    expect(steps).to_have_attribute("aria-invalid", "true")
    assert "Steps: add at least one step" in _described_by(page, steps)
    shot(page, "card-review-plain-error", element=card)


def test_refused_answer_focuses_the_field_without_javascript(login_as):
    page = login_as("owner", javascript=False)
    start_chat(page, "dev", topic="Focus")
    for _ in range(100):
        if page.locator(f"{PENDING}.card--input").count():
            break
        page.wait_for_timeout(200)
        page.reload()
    card = page.locator(f"{PENDING}.card--input")
    field = card.locator("input[name=value]")
    field.evaluate("e => { e.required = false; e.value = '   '; }")  # past the browser's check
    card.locator("button[type=submit]").click()
    card = page.locator(f"{PENDING}.card--input")
    field = card.locator("input[name=value]")
    expect(field).to_be_focused()  # autofocus: no script needed
    assert "must not be empty" in _described_by(page, field)


def test_late_answer_names_who_answered(login_as):
    owner = login_as("owner")
    url = start_chat(owner, "approvals")
    expect(owner.locator(PENDING)).to_have_count(2)
    # A second tab of the same user and a reviewer's page, both without JavaScript (they
    # do not update themselves, so they still show the question when they answer).
    tab = login_as("owner", javascript=False)
    tab.goto(url)
    reviewer = login_as("reviewer", javascript=False)
    reviewer.goto(url)
    first, second = [c.get_attribute("data-interrupt-id")
                     for c in owner.locator(PENDING).all()]
    owner.locator(f".card[data-interrupt-id='{first}'] button[value=approve]").click()
    expect(owner.locator(f".card[data-interrupt-id='{first}']")).to_have_attribute(
        "data-status", "decided")
    tab.locator(f".card[data-interrupt-id='{first}'] button[value=reject]").click()
    errors = tab.locator(f".card[data-interrupt-id='{first}'] .card__errors")
    expect(errors).to_contain_text("was already answered by you, in another tab.")
    expect(errors).to_be_focused()
    reviewer.locator(f".card[data-interrupt-id='{first}'] button[value=reject]").click()
    expect(reviewer.locator(f".card[data-interrupt-id='{first}'] .card__errors")).to_contain_text(
        "was already answered by owner.")
    assert second


@pytest.mark.agui_unchecked  # the run below is written directly, without a worker
def test_running_page_without_javascript_reloads_itself(login_as, users):
    from runs.models import AgentRun, Conversation

    conversation = Conversation.objects.create(owner=users["owner"], agent="showcase",
                                               title="working")
    # A live lease, so the worker's reaper leaves the run running for the whole test.
    run = AgentRun.objects.create(
        owner=users["owner"], conversation=conversation, agent="showcase", agent_version="1",
        thread_id=str(conversation.id), status="running", lease_owner="test",
        lease_expires_at=timezone.now() + timedelta(hours=1))
    try:
        page = login_as("owner", javascript=False)
        page.goto(f"/c/{conversation.id}/")
        expect(page.locator("#noscript-reload")).to_be_visible()
        expect(page.locator("#noscript-reload")).to_contain_text("reload")
        assert page.locator("noscript meta[http-equiv=refresh]").count() == 1
        # With JavaScript the page follows the run itself: no notice.
        live = login_as("owner")
        live.goto(f"/c/{conversation.id}/")
        expect(live.locator("#noscript-reload")).to_be_hidden()
    finally:
        AgentRun.objects.filter(pk=run.pk).update(status="cancelled")


def test_chat_header_description_ends_on_a_whole_word(login_as):
    from runs import registry

    page = login_as("owner")
    start_chat(page, "showcase")
    full = registry.get("showcase").description
    shown = page.locator(".chat__desc").inner_text()
    assert shown.endswith("…") and len(full) > len(shown)
    kept = shown.rstrip("…").strip()
    assert full.startswith(kept) and full[len(kept)] == " "


def test_answered_card_of_a_failed_run_says_who_answered(login_as):
    page = login_as("owner")
    start_chat(page, "faulty")
    card = pending_card(page, "input")
    card.locator("input[name=value]").fill("go")
    card.locator("button[type=submit]").click()
    expect(page.locator("#run-status")).to_contain_text("Failed")
    page.reload()
    answered = page.locator(".card--input")
    expect(answered).to_contain_text("Answered by owner")
    expect(answered).not_to_contain_text("Cancelled")

"""The focus moves on after an htmx answer even when the live refresh replaces the run's
block while htmx is still settling the answered card (static/agentsite/cards.js).

htmx fires ``htmx:afterSettle`` on the swapped-in card ``settleDelay`` after the swap (20 ms
by default); the answer's own ``interrupts_changed`` makes chat.js fetch and swap the run
block, which detaches that card. An event on a detached element never reaches a listener
on the document. Here the settle delay is widened (htmx's public ``htmx.config``) so the
refresh always lands inside it: the race that failed the focus test about 1 run in 5.
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.pages.test_browser import PENDING, start_chat
from tests.pages.test_browser_formats import TALL

CARD = f"{PENDING}.card--tool_approval"


def test_the_focus_moves_on_when_the_refresh_lands_while_htmx_settles(login_as, shot):
    page = login_as("owner", viewport=TALL)
    start_chat(page, "adopter_per_call")
    cards = page.locator(CARD)
    expect(cards).to_have_count(2)
    email_id = cards.filter(has_text="send_email").get_attribute("data-interrupt-id")
    page.evaluate("() => { htmx.config.defaultSettleDelay = 1500; }")

    delete = cards.filter(has_text="delete_file")
    delete.locator("summary", has_text="Reject").click()
    delete.locator("button[value=reject]").click()
    # The refresh replaced the run's block within the settle delay: the answered card
    # htmx swapped in is no longer in the page when it settles.
    page.wait_for_function("() => !document.querySelector('.htmx-settling')"
                           " && document.querySelectorAll('.card[data-status=pending]').length"
                           " === 1")
    page.wait_for_function(f"() => document.activeElement.dataset.interruptId === '{email_id}'")
    shot(page, "focus-after-answer-settle-race")

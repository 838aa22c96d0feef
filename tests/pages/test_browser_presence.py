"""Reviewer presence and the soft claim (issue 39), in headless Chromium on the live
server, worker and Redis: two people on one card see each other within 2 s, typing is a
soft claim the other sees, answering over it asks for a confirmation first (a server
step: the form works without JavaScript too), an outsider learns nothing, and a tab that
stops renewing (killed) drops out after PRESENCE_TTL_SECONDS (4 s in the suite)."""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import expect

from hitl.models import AgentInterrupt
from hitl.presence import presence_of
from tests.browser_fixtures import PRESENCE_LIVE
from tests.pages.test_browser import PENDING, start_chat

pytestmark = pytest.mark.django_db(transaction=True)


def _beat(page, items: list[dict]) -> dict:
    """One heartbeat POSTed from ``page``'s session (its cookies and CSRF token), and
    never renewed: a tab that is killed right after."""
    token = page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value")
    response = page.context.request.post("/presence/", form={
        "csrfmiddlewaretoken": token, "items": json.dumps(items)},
        headers={"X-CSRFToken": token})
    assert response.ok, response.text()
    return response.json()


def test_two_people_see_each_other_and_the_soft_claim(login_as, shot):
    owner = login_as("owner")
    url = start_chat(owner, "dev", topic="presence")
    card = owner.locator(PENDING)
    expect(card).to_have_count(1)
    seen = owner.locator(f"{PENDING} .presence")

    reviewer = login_as("reviewer")
    reviewer.goto(url)
    # Each sees the other: the owner live (the stream), the reviewer at least at load.
    expect(seen).to_contain_text("reviewer is viewing this", timeout=PRESENCE_LIVE)
    expect(reviewer.locator(f"{PENDING} .presence")).to_contain_text(
        "owner is viewing this", timeout=PRESENCE_LIVE)

    # The reviewer types: a soft claim the owner sees at once.
    reviewer.locator(f"{PENDING} input[name=value]").fill("Reviewer's name")
    expect(seen).to_contain_text("reviewer is answering…", timeout=PRESENCE_LIVE)
    shot(owner, "presence-soft-claim", element=card)

    # Answering over it asks first; nothing is recorded until the owner sends again.
    card.locator("input[name=value]").fill("Owner's name")
    card.locator("button[type=submit]").first.click()
    confirm = owner.locator(f"{PENDING} .card__errors")
    expect(confirm).to_contain_text("reviewer is answering this question right now")
    shot(owner, "presence-confirm", element=owner.locator(PENDING))
    row = AgentInterrupt.objects.get(run__conversation_id=url.rstrip("/").rsplit("/", 1)[1],
                                     status="pending")
    assert row.decision is None
    owner.locator(PENDING).locator("button[type=submit]").first.click()
    expect(owner.locator(f".card[data-interrupt-id='{row.interrupt_id}']")).to_have_attribute(
        "data-status", re.compile("decided|applied"))
    row.refresh_from_db()
    assert row.decision == {"value": "Owner's name"}


def test_an_outsider_sees_no_presence_and_a_killed_tab_expires(login_as, shot):
    owner = login_as("owner")
    url = start_chat(owner, "dev", topic="presence")
    expect(owner.locator(PENDING)).to_have_count(1)
    row = AgentInterrupt.objects.get(run__conversation_id=url.rstrip("/").rsplit("/", 1)[1])
    item = {"run_id": str(row.run_id), "interrupt_id": row.interrupt_id, "state": "viewing"}

    # An outsider may not see the question: their beat reads as not found, says nobody.
    outsider = login_as("outsider")
    assert outsider.goto(url).status == 404
    outsider.goto("/")
    assert _beat(outsider, [item])["items"] == [{**{k: item[k] for k in (
        "run_id", "interrupt_id")}, "error": "not_found"}]
    assert "outsider" not in [p.name for p in presence_of(row.run_id, row.interrupt_id)]

    # A reviewer's tab beats once, as answering, then is killed: no "left" ever comes.
    reviewer = login_as("reviewer")
    reviewer.goto("/")
    _beat(reviewer, [{**item, "state": "answering"}])
    beaten = time.monotonic()
    seen = owner.locator(f"{PENDING} .presence")
    expect(seen).to_contain_text("reviewer is answering…", timeout=PRESENCE_LIVE)
    # Without JavaScript the card shows presence as of page load.
    plain = login_as("owner", javascript=False)
    plain.goto(url)
    expect(plain.locator(f"{PENDING} .presence")).to_contain_text("reviewer is answering…")
    # Gone by itself after the 4 s TTL, with slack for a busy machine (not for ever).
    gone_by = beaten + 4 + 6
    expect(seen).to_be_hidden(timeout=15_000)
    assert time.monotonic() <= gone_by
    assert "reviewer" not in [p.name for p in presence_of(row.run_id, row.interrupt_id)]

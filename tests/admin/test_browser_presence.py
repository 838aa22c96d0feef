"""Presence in the admin (issue 39), in Chromium: the queue row and the decide page show
who is on a question within 2 s of it changing, live on the queue stream."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser_fixtures import PRESENCE_LIVE
from tests.helpers import pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_queue_row_and_decide_page_show_presence_live(login_as, api, users, shot):
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    client = api("owner")
    run = wait_run(client, start_run(client, input={"topic": "admin presence"})["id"],
                   "paused")
    item = pending(run)
    queue = login_as("reviewer", viewport={"width": 1300, "height": 900})
    queue.goto("/admin/hitl/agentinterrupt/")
    expect(queue.locator("#queue-live")).to_have_attribute("data-live", "open")
    row = queue.locator(f"[data-presence-interrupt='{item['interrupt_id']}']")
    expect(row).to_be_hidden()

    owner = login_as("owner")
    owner.goto(f"/c/{run['conversation_id']}/")
    expect(row).to_contain_text("owner is viewing this", timeout=PRESENCE_LIVE)
    shot(queue, "admin-queue-presence", full_page=False)

    queue.goto(f"/admin/hitl/agentinterrupt/{item['id']}/change/")
    expect(owner.locator(".card[data-status=pending] .presence")).to_contain_text(
        "reviewer is viewing this", timeout=PRESENCE_LIVE)
    owner.locator(".card[data-status=pending] input[name=value]").fill("Vega")
    expect(queue.locator(".card .presence")).to_contain_text("owner is answering…",
                                                             timeout=PRESENCE_LIVE)
    shot(queue, "admin-decide-presence", full_page=False)

"""Reviewer presence through Pushpin (issue 39): two people on one chat-page card behind
the proxy, which holds their queue streams (two web processes behind it), see each other
and the soft claim within 2 s: presence is told on the existing streams, no new server."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser_fixtures import (
    browser_type_launch_args,  # noqa: F401  (Chromium)
    shot,  # noqa: F401  (screenshots)
)
from tests.edge.test_edge_browser_notice import _login
from tests.helpers import start_run, wait_run

PENDING = ".card[data-status=pending]"


def test_presence_and_soft_claim_through_pushpin(browser, edge, live, users, api,
                                                 shot):  # noqa: F811
    client = api("owner")
    run = wait_run(client, start_run(client, input={"topic": "edge presence"})["id"], "paused")
    url = f"/c/{run['conversation_id']}/"
    contexts = []
    try:
        context, owner = _login(browser, edge["base_url"], "owner")
        contexts.append(context)
        owner.goto(url)
        expect(owner.locator("#chat")).to_have_attribute("data-live", "true")
        seen = owner.locator(f"{PENDING} .presence")
        context, reviewer = _login(browser, edge["base_url"], "reviewer")
        contexts.append(context)
        reviewer.goto(url)
        expect(seen).to_contain_text("reviewer is viewing this", timeout=2000)
        reviewer.locator(f"{PENDING} input[name=value]").fill("Vega")
        expect(seen).to_contain_text("reviewer is answering…", timeout=2000)
        shot(owner, "edge-presence", element=owner.locator(PENDING))
    finally:
        for context in contexts:
            context.close()

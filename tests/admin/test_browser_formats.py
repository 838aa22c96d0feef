"""Every interrupt format's card on the admin decide page (the same card as the chat page),
and bulk "approve selected" where a format has a plain approve, in headless Chromium
against agents written as LangChain / LangGraph users write them: each test checks what
the graph received or which tools ran."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.helpers import start_run, wait_run

QUEUE = "/admin/hitl/agentinterrupt/"


@pytest.fixture
def reviewer_page(users, login_as):
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    return login_as("reviewer", viewport={"width": 1300, "height": 1200})


def tools_ran(thread_id: str) -> list[dict]:
    from tests.adopter_agents import redis_client, tools_key

    return [json.loads(x) for x in redis_client.lrange(tools_key(thread_id), 0, -1)]


def paused(client, agent: str) -> dict:
    return wait_run(client, start_run(client, agent)["id"], "paused")


def open_card(page, item: dict):
    page.goto(f"{QUEUE}{item['id']}/change/?_after=queue")
    form = page.locator(f"form[data-interrupt-id='{item['interrupt_id']}']")
    expect(form).to_be_visible()
    return form


def test_each_format_is_answered_from_its_decide_page(api, reviewer_page, shot):
    owner = api("owner")
    page = reviewer_page

    run = paused(owner, "adopter_batched")
    form = open_card(page, run["pending_interrupts"][0])
    expect(page.locator("#content h1")).to_have_text("Answer a tool approval")
    shot(page, "admin-decide-hitl_request")
    rows = form.locator(".tool-row")
    rows.nth(0).get_by_label("Approve").check()
    rows.nth(1).get_by_label("Reject").check()
    form.locator("button[type=submit]", has_text="Send these decisions").click()
    page.wait_for_url(f"**{QUEUE}")
    done = wait_run(owner, run["id"], "completed")
    assert [t["name"] for t in tools_ran(done["thread_id"])] == ["send_email"]

    run = paused(owner, "adopter_typed")
    form = open_card(page, run["pending_interrupts"][0])
    shot(page, "admin-decide-schema_form")
    form.get_by_label("Destination").fill("Oslo")
    form.get_by_label("Nights").fill("2")
    form.locator("button[type=submit]").click()
    page.wait_for_url(f"**{QUEUE}")
    assert wait_run(owner, run["id"], "completed")["result"] == {"received": {
        "type": "Trip", "data": {"destination": "Oslo", "nights": 2, "smoking": False}}}

    run = paused(owner, "adopter_inbox")
    form = open_card(page, run["pending_interrupts"][0])
    shot(page, "admin-decide-agent_inbox")
    form.locator("summary", has_text="Respond").click()
    form.get_by_label("Your response").fill("not today")
    form.locator("button[value=response]").click()
    page.wait_for_url(f"**{QUEUE}")
    assert wait_run(owner, run["id"], "completed")["result"] == {"received": {
        "type": "response", "args": "not today"}}

    run = paused(owner, "adopter_string")
    form = open_card(page, run["pending_interrupts"][0])
    shot(page, "admin-decide-generic")
    form.get_by_label("Your answer").fill("Gemini")
    form.locator("button[type=submit]", has_text="Send").click()
    page.wait_for_url(f"**{QUEUE}")
    assert wait_run(owner, run["id"], "completed")["result"] == {"received": "Gemini"}

    run = paused(owner, "adopter_per_call")
    for _ in range(2):
        run = wait_run(owner, run["id"], "paused")
        item = next(i for i in run["pending_interrupts"] if i["status"] == "pending")
        form = open_card(page, item)
        shot(page, "admin-decide-tool_approval")
        form.locator("button[value=approve]").click()
        page.wait_for_url(f"**{QUEUE}")
        run = owner.get(f"/api/runs/{run['id']}/").json()
    done = wait_run(owner, run["id"], "completed")
    assert sorted(t["name"] for t in tools_ran(done["thread_id"])) == ["delete_file", "send_email"]


def test_bulk_approve_applies_to_formats_with_a_plain_approve(api, reviewer_page, shot):
    owner = api("owner")
    batched = paused(owner, "adopter_batched")
    inbox = paused(owner, "adopter_inbox")
    plain = paused(owner, "adopter_string")
    page = reviewer_page
    page.goto(QUEUE)
    # The queue redraws itself on events: let the last pauses' events arrive first.
    expect(page.locator("#queue-live")).to_have_attribute("data-live", "open")
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    page.wait_for_timeout(1000)
    for run in (batched, inbox, plain):
        page.locator(f"input.action-select[value='{run['pending_interrupts'][0]['id']}']").check()
    expect(page.locator("input.action-select:checked")).to_have_count(3)
    page.select_option("select[name=action]", "approve_selected")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text(
        "2 interrupts approved; 1 skipped (1 not approvable)")
    shot(page, "admin-bulk-approve-formats")
    done = wait_run(owner, batched["id"], "completed")
    assert sorted(t["name"] for t in tools_ran(done["thread_id"])) == ["delete_file", "send_email"]
    assert wait_run(owner, inbox["id"], "completed")["result"] == {"received": {
        "type": "accept", "args": None}}
    assert wait_run(owner, plain["id"], "paused")["status"] == "paused"


def test_odd_values_render_on_both_surfaces_and_are_answered(api, reviewer_page, login_as):
    from tests.adopter_agents import ODD_VALUES

    owner = api("owner")
    chat = login_as("owner")
    page = reviewer_page
    for which in ODD_VALUES:
        run = wait_run(owner, start_run(owner, "adopter_odd", input={"which": which})["id"],
                       "paused")
        item = run["pending_interrupts"][0]
        response = chat.goto(f"/c/{run['conversation_id']}/")
        assert response.status == 200, which
        card = chat.locator(f".card[data-interrupt-id='{item['interrupt_id']}']")
        expect(card.locator("form")).to_have_count(1)
        form = open_card(page, item)
        if item["kind"] == "generic":
            form.get_by_label("Your answer").fill("42")
            form.get_by_label("JSON (a number, true, a list, an object…)").check()
            form.locator("button[type=submit]", has_text="Send").click()
            page.wait_for_url(f"**{QUEUE}")
            assert wait_run(owner, run["id"], "completed")["result"] == {"received": 42}, which

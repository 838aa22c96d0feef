""""Answer differently" on the chat page (issue 39), in headless Chromium: the fork page
lists what the original did after the answer, forks with a plain form (no JavaScript
needed), both transcripts link to each other, and a pruned checkpoint is refused."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from execution import checkpoint_pruning
from runs.models import AgentRun
from tests.execution.test_fork import _completed_dev
from tests.helpers import pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_answer_differently_without_javascript_and_the_links_both_ways(api, login_as, shot):
    client = api("owner")
    original, asked = _completed_dev(client)
    page = login_as("owner", javascript=False)
    page.goto(f"/c/{original['conversation_id']}/")
    page.locator(f"[data-fork-of='{asked[1]['interrupt_id']}']").click()
    expect(page.locator("#fork-effects")).to_contain_text("No tool call ran")
    expect(page.locator("#fork-original")).to_contain_text("Blue")
    shot(page, "fork-page")
    page.locator("#fork-form").get_by_label("Red").check()
    page.locator("#fork-form button[type=submit]").click()
    # The new conversation, linked to the original; it asks the extras again.
    expect(page.locator("#forked-from")).to_be_visible()
    fork = AgentRun.objects.get(forked_from_id=original["id"])
    assert page.url.endswith(f"/c/{fork.conversation_id}/")
    wait_run(client, str(fork.pk), "paused")
    page.reload()
    expect(page.locator(".card[data-status=pending]")).to_have_count(1)
    shot(page, "fork-conversation")
    page.locator("#forked-from a").click()
    expect(page.locator("#forks a")).to_have_count(1)


def test_the_fork_page_lists_tool_calls_and_refuses_a_pruned_checkpoint(api, login_as, shot):
    client = api("owner")
    run = wait_run(client, start_run(client, "adopter_batched", message="email, delete")["id"],
                   "paused")
    item = pending(run)
    assert client.post(f"/api/interrupts/{item['id']}/decision/", json={"payload": {
        "decisions": [{"type": "approve"}, {"type": "approve"}]}}).status_code == 202
    wait_run(client, run["id"], "completed")
    page = login_as("owner")
    page.goto(f"/c/{run['conversation_id']}/fork/{item['interrupt_id']}/")
    calls = page.locator(".fork__call")
    expect(calls).to_have_count(2)
    expect(calls.first).to_contain_text("send_email")
    expect(calls.nth(1)).to_contain_text("delete_file")
    shot(page, "fork-page-tool-calls")

    checkpoint_pruning.sweep(older_than=0)
    response = page.goto(f"/c/{run['conversation_id']}/fork/{item['interrupt_id']}/")
    assert response.status == 410
    expect(page.locator("#fork-refused")).to_contain_text("pruned")
    expect(page.locator("#fork-form")).to_have_count(0)
    shot(page, "fork-page-pruned")

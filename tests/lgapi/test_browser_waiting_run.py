"""In Chromium: a chat page whose thread has a run waiting behind a paused one (LangGraph's
``multitask_strategy="enqueue"``) shows and follows the paused run. Its card is answered
by clicking, and the run's next question arrives live (the page listens to the paused
run's events, not the waiting run's); the waiting run shows as waiting."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from runs.models import AgentRun
from tests.browser_fixtures import (
    browser_type_launch_args,  # noqa: F401  (Chromium)
    login_as,  # noqa: F401,F811  (a logged-in page)
    shot,  # noqa: F401,F811  (screenshots)
)

pytestmark = pytest.mark.django_db(transaction=True)

PENDING = ".card[data-status=pending]"


def test_paused_card_answered_live_while_a_run_waits(lg, login_as, shot):  # noqa: F811
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "dev", input={"topic": "first"})
    queued = client.runs.create(tid, "dev", input={"topic": "second"},
                                multitask_strategy="enqueue")

    page = login_as("owner")
    page.goto(f"/c/{tid}/")
    expect(page.locator("#run-status")).to_contain_text("Paused")
    expect(page.locator("#composer-reason")).to_contain_text("Answer the question")
    expect(page.locator(f"#run-{queued['run_id']} [data-run-status]")).to_have_text("Waiting")
    card = page.locator(f"{PENDING}.card--input")
    expect(card).to_be_visible()
    shot(page, "chat-paused-run-with-waiting-run")
    card.locator("input[name=value]").fill("Apollo")
    card.locator("button[type=submit]").click()
    # The paused run's next question, live, without a reload.
    expect(page.locator(f"{PENDING}.card--select")).to_be_visible(timeout=20_000)
    assert AgentRun.objects.get(pk=queued["run_id"]).status == "waiting"

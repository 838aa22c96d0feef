"""A chat page in real Chromium behind Pushpin survives a full restart: both web
processes and Pushpin go down, Pushpin comes back first and answers the browser's
reconnect with a 502 (no web process to proxy to), then a web process comes back.

EventSource gives up for good on that 502 (readyState CLOSED, no retry of its own);
static/agentsite/events.js must reopen the stream after its backoff, from the last event
the page has. The page must show every event published before, during and after, once
each, in order.
"""

from __future__ import annotations

import threading
import time

from playwright.sync_api import Response, expect

from agentsite.processes import crash
from agui.events import run_finished_success, run_started, text_content, text_end, text_start
from runs.models import AgentRun
from streams.publish import publish, wait_published
from tests.browser_fixtures import browser_type_launch_args  # noqa: F401  (Chromium)
from tests.retry_rows import retrying_run


def test_chat_page_follows_its_run_across_a_full_restart(browser, edge, live, users):
    # Waiting to retry in 10 minutes: live, and left alone by workers and sweeps.
    run = retrying_run(users["owner"], in_seconds=600)
    message = "edge-reconnect"
    context = browser.new_context(base_url=edge["base_url"])
    context.set_default_timeout(20_000)
    try:
        page = context.new_page()
        events_path = f"/api/runs/{run.id}/events/"
        refused: list[int] = []

        def seen(response: Response) -> None:
            if events_path in response.url and response.status >= 500:
                refused.append(response.status)

        page.on("response", seen)
        page.goto("/accounts/login/")
        page.fill("#id_username", "owner")
        page.fill("#id_password", "pw-owner")
        page.click("button[type=submit]")
        page.wait_for_url(f"{edge['base_url']}/")
        page.goto(f"/c/{run.conversation_id}/")
        expect(page.locator("#chat")).to_have_attribute("data-live", "true")

        publish(run.id, [run_started(thread_id=run.thread_id, run_id=str(run.id)),
                         text_start(message), text_content(message, "a")])
        wait_published()
        text = page.locator(f"#msg-{message} .msg__text")
        expect(text).to_have_text("a", timeout=20_000)

        for web in edge["webs"]:
            crash(web)  # Pushpin still holds the page's streams
        crash(edge["pushpin"])  # now they drop; the browser retries by itself
        publish(run.id, [text_content(message, "b")])  # in the store only
        wait_published()
        # Pushpin is ready once a request through it reaches a web process: start it in
        # the background, and the web processes only after the browser got its 502.
        pushpin = threading.Thread(target=edge["pushpin"].start, daemon=True)
        pushpin.start()
        deadline = time.monotonic() + 30
        while not refused and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        assert refused, "the browser's reconnect was not refused"
        publish(run.id, [text_content(message, "c")])
        wait_published()
        edge["webs"][0].start()
        pushpin.join(60)
        publish(run.id, [text_content(message, "d")])  # after the restart
        wait_published()
        expect(text).to_have_text("abcd", timeout=30_000)  # each once, in order
    finally:
        for process in (*edge["webs"], edge["pushpin"]):
            if process.proc is None or process.proc.poll() is not None:
                process.start()
        publish(run.id, [text_end(message),
                         run_finished_success(thread_id=run.thread_id, run_id=str(run.id),
                                              result=None)])
        wait_published()
        AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.COMPLETED)
        context.close()

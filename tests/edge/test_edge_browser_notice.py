"""The pages say when their live stream is down: a chat page (its owner) and the admin
approval queue (a staff reviewer) in real Chromium behind Pushpin, the server holding
their streams. Pushpin is stopped: both pages show "Reconnecting…" (events.js notice(),
server-rendered markup, no inline script or style). Meanwhile the run streams on and a new
question reaches the queue. Pushpin comes back: the notices go, and both pages have what
happened while they were away (the run's text, the queue's new row).
"""

from __future__ import annotations

from playwright.sync_api import expect

from agentsite.processes import crash
from agui.events import run_finished_success, run_started, text_content, text_end, text_start
from runs.models import AgentRun
from streams.publish import publish, wait_published
from tests.browser_fixtures import (
    browser_type_launch_args,  # noqa: F401  (Chromium)
    shot,  # noqa: F401  (screenshots)
)
from tests.helpers import start_run, wait_run
from tests.retry_rows import retrying_run

QUEUE = "/admin/hitl/agentinterrupt/"


def _login(browser, base_url: str, name: str):
    context = browser.new_context(base_url=base_url, viewport={"width": 1300, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.goto("/accounts/login/")
    page.fill("#id_username", name)
    page.fill("#id_password", f"pw-{name}")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/")
    return context, page


def test_pages_say_reconnecting_while_the_stream_is_down(browser, edge, live, users, api,
                                                        shot):  # noqa: F811
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    # Waiting to retry in 10 minutes: live, and left alone by workers and sweeps.
    run = retrying_run(users["owner"], in_seconds=600)
    message = "edge-notice"
    contexts = []
    try:
        context, chat = _login(browser, edge["base_url"], "owner")
        contexts.append(context)
        chat.goto(f"/c/{run.conversation_id}/")
        expect(chat.locator("#chat")).to_have_attribute("data-live", "true")
        context, queue = _login(browser, edge["base_url"], "reviewer")
        contexts.append(context)
        queue.goto(QUEUE)
        expect(queue.locator("#queue-live")).to_have_attribute("data-live", "open")

        publish(run.id, [run_started(thread_id=run.thread_id, run_id=str(run.id)),
                         text_start(message), text_content(message, "a")])
        wait_published()
        text = chat.locator(f"#msg-{message} .msg__text")
        expect(text).to_have_text("a")
        for page in (chat, queue):
            expect(page.locator("#stream-notice")).to_have_attribute("data-state", "open")
            expect(page.locator("#stream-notice [data-state=reconnecting]")).to_be_hidden()

        crash(edge["pushpin"])  # the server holding both pages' streams
        for page in (chat, queue):
            notice = page.locator("#stream-notice [data-state=reconnecting]")
            expect(notice).to_be_visible()
            expect(notice).to_contain_text("Reconnecting…")
        shot(chat, "edge-chat-reconnecting", full_page=False)
        shot(queue, "edge-queue-reconnecting", full_page=False)

        # While it is down: the run goes on, and another run asks a question.
        publish(run.id, [text_content(message, "b")])
        wait_published()
        owner = api("owner")
        asked = wait_run(owner, start_run(owner)["id"], "paused")
        question = asked["pending_interrupts"][0]["id"]

        edge["pushpin"].start()
        publish(run.id, [text_content(message, "c")])
        wait_published()
        for page in (chat, queue):
            expect(page.locator("#stream-notice")).to_have_attribute("data-state", "open")
            expect(page.locator("#stream-notice [data-state=reconnecting]")).to_be_hidden()
        expect(text).to_have_text("abc")  # each once, in order
        expect(queue.locator(f"#result_list a[href*='{question}']")).to_have_count(1)
        shot(chat, "edge-chat-reconnected", full_page=False)
        shot(queue, "edge-queue-reconnected", full_page=False)
    finally:
        if edge["pushpin"].proc is None or edge["pushpin"].proc.poll() is not None:
            edge["pushpin"].start()
        publish(run.id, [text_end(message),
                         run_finished_success(thread_id=run.thread_id, run_id=str(run.id),
                                              result=None)])
        wait_published()
        AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.COMPLETED)
        for context in contexts:
            context.close()

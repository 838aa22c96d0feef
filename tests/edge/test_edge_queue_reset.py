"""Queue changes lost in an outage reach the pages anyway, and the pages say when their
stream is down, on the direct path as behind Pushpin.

A queue change published while Redis is down is lost (the store never had it). The queue
stream (/api/events/) then sends a stream-reset; the admin queue re-reads its rows and
the chat page its runs:
directly (a web process whose fan-out connection dropped sends it once it is back) and
held by Pushpin (the edge forwarder sends it on queue-reset once subscribed again). The
outage is made here by a question created in the database only and every pub/sub
connection of the session's Redis killed (CLIENT KILL TYPE pubsub).

Killed web process under the pages opened on it directly (no Pushpin): the chat page and
the admin queue show "Reconnecting…" (events.js notice()) until it serves again.
"""

from __future__ import annotations

import redis
from django.conf import settings
from playwright.sync_api import expect

from agentsite.processes import crash
from hitl.models import AgentInterrupt
from runs.models import AgentRun
from tests.browser_fixtures import (
    browser_type_launch_args,  # noqa: F401  (Chromium)
    shot,  # noqa: F401  (screenshots)
)
from tests.edge.test_edge_browser_notice import QUEUE, _login
from tests.retry_rows import make_run, retrying_run


def _direct(edge) -> str:
    """A web process's own address: the second one (Pushpin routes to the first)."""
    return f"http://127.0.0.1:{edge['web_ports'][1]}"


def test_the_queue_rereads_after_changes_were_lost(browser, edge, live, users,
                                                   shot):  # noqa: F811
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    run = make_run(users["owner"], AgentRun.Status.PAUSED)
    contexts, pages = [], {}
    try:
        for where, base in (("held", edge["base_url"]), ("direct", _direct(edge))):
            context, page = _login(browser, base, "reviewer")
            contexts.append(context)
            page.goto(QUEUE)
            expect(page.locator("#queue-live")).to_have_attribute("data-live", "open")
            pages[where] = page
        context, chat = _login(browser, _direct(edge), "owner")
        contexts.append(context)
        chat.goto(f"/c/{run.conversation_id}/")
        expect(chat.locator("#chat")).to_have_attribute("data-live", "true")

        # Asked while Redis was down: in the database, never published.
        asked = "Asked while Redis was down"
        question = AgentInterrupt.objects.create(
            run=run, interrupt_id="asked-in-the-outage", kind="input",
            request={"type": "input", "message": asked})
        redis.Redis.from_url(settings.REDIS_URL).client_kill_filter(_type="pubsub")

        for where, page in pages.items():
            expect(page.locator(f"#result_list a[href*='{question.pk}']")).to_have_count(1)
            shot(page, f"edge-queue-reset-{where}", full_page=False)
        expect(chat.locator(f"#cards-{run.id}")).to_contain_text(asked)
        shot(chat, "edge-chat-queue-reset", full_page=False)
    finally:
        AgentInterrupt.objects.filter(run=run).update(status=AgentInterrupt.Status.CANCELLED)
        AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.CANCELLED)
        for context in contexts:
            context.close()


def test_direct_pages_say_reconnecting_while_their_web_process_is_down(
        browser, edge, live, users, shot):  # noqa: F811
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    run = retrying_run(users["owner"], in_seconds=600)  # live: its stream stays open
    web = edge["webs"][1]
    contexts = []
    try:
        context, chat = _login(browser, _direct(edge), "owner")
        contexts.append(context)
        chat.goto(f"/c/{run.conversation_id}/")
        expect(chat.locator("#chat")).to_have_attribute("data-live", "true")
        context, queue = _login(browser, _direct(edge), "reviewer")
        contexts.append(context)
        queue.goto(QUEUE)
        expect(queue.locator("#queue-live")).to_have_attribute("data-live", "open")
        for page in (chat, queue):
            expect(page.locator("#stream-notice")).to_have_attribute("data-state", "open")

        crash(web)
        for page in (chat, queue):
            notice = page.locator("#stream-notice [data-state=reconnecting]")
            expect(notice).to_be_visible()
            expect(notice).to_contain_text("Reconnecting…")
        shot(chat, "direct-chat-reconnecting", full_page=False)
        shot(queue, "direct-queue-reconnecting", full_page=False)

        web.start()
        for page in (chat, queue):
            expect(page.locator("#stream-notice")).to_have_attribute("data-state", "open",
                                                                     timeout=60_000)
            expect(page.locator("#stream-notice [data-state=reconnecting]")).to_be_hidden()
        shot(chat, "direct-chat-reconnected", full_page=False)
        shot(queue, "direct-queue-reconnected", full_page=False)
    finally:
        if web.proc is None or web.proc.poll() is not None:
            web.start()
        AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.COMPLETED)
        for context in contexts:
            context.close()

"""The chat page: server time with a long conversation, and how fast a new card shows up.

1. Server time of ``/c/<id>/`` for a conversation with 50 and with 500 messages (a run per
   user/assistant pair), the last run paused with 3 pending cards: p50 / p99 and the
   number of SQL queries (the same for both: it does not grow with the messages).
   Finished runs' blocks are cached as HTML after the first request (pages/transcript.py);
   that first request's time is printed too.
   In-process with Django's test client, on a bench database ``agentsite_bench_pages``.
2. From the worker's RUN_FINISHED (outcome interrupt) to the new card visible in headless
   Chromium, p50 over 20 cards: a real web server and worker; the page is open on a
   paused ``dev`` run, the script answers a card in the page and times the next one.
   RUN_FINISHED's own timestamp (set in the worker as it pauses the run) against the
   browser's clock at the first animation frame after the card entered the page.

Usage: python bench/pages.py [--samples 40] [--cards 20]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop, see below

from bench._database import fresh_database, use_database  # noqa: E402

fresh_database()

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench._services import Stack, percentile, report  # noqa: E402

BENCH_DB = "agentsite_bench_pages"


def seed_conversation(owner, messages: int):
    """A conversation of ``messages`` messages, the last run paused with 3 pending cards."""
    from hitl.models import AgentInterrupt
    from runs.models import AgentRun, Conversation, Message

    conv = Conversation.objects.create(owner=owner, agent="dev", title=f"{messages} messages")
    pairs = messages // 2
    runs = [AgentRun(owner=owner, conversation=conv, agent="dev", agent_version="1",
                     thread_id=str(conv.id), input={"topic": f"t{i}"},
                     status="paused" if i == pairs - 1 else "completed",
                     result=None if i == pairs - 1 else {"name": f"n{i}", "approved": True})
            for i in range(pairs)]
    AgentRun.objects.bulk_create(runs)
    rows = []
    for i, run in enumerate(runs):
        rows.append(Message(conversation=conv, run=run, role="user",
                            content=f"Message {i}: please do the **thing** number {i}."))
        rows.append(Message(conversation=conv, run=run, role="assistant", content=(
            f"Summary {i}: name **n{i}**, color blue, extras logging; approved.\n\n"
            "- one\n- two\n- [docs](https://example.com)")))
    Message.objects.bulk_create(rows)
    for run, assistant in zip(runs, rows[1::2], strict=True):
        run.assistant_message = assistant
    AgentRun.objects.bulk_update(runs, ["assistant_message"])
    last = runs[-1]
    AgentInterrupt.objects.bulk_create([
        AgentInterrupt(run=last, interrupt_id=uuid.uuid4().hex, kind="approval",
                       request={"type": "approval", "message": "Ship it?",
                                "details": {"name": "x", "extras": ["a", "b"]}}),
        AgentInterrupt(run=last, interrupt_id=uuid.uuid4().hex, kind="select",
                       request={"type": "select", "message": "Pick one", "options": [
                           {"label": "Red", "value": "red"}, {"label": "Blue", "value": "blue"}]}),
        AgentInterrupt(run=last, interrupt_id=uuid.uuid4().hex, kind="review",
                       request={"type": "review", "message": "Review", "proposal": {
                           "title": "Plan", "steps": ["a", "b"]},
                           "allowed": ["approve", "edit", "reject"],
                           "editSchema": {"type": "object", "properties": {
                               "title": {"type": "string"},
                               "steps": {"type": "array", "items": {"type": "string"}}}}}),
    ])
    return conv


def server_time(samples: int) -> None:
    owner = get_user_model().objects.create_user("bench-owner", password="pw-bench-owner")
    client = Client()
    client.force_login(owner)
    print("Chat page server time (test client, in process):")
    for messages in (50, 500):
        conv = seed_conversation(owner, messages)
        url = f"/c/{conv.id}/"
        start = time.perf_counter()
        assert client.get(url).status_code == 200  # the first request fills the caches
        cold = (time.perf_counter() - start) * 1000
        times, queries = [], set()
        for _ in range(samples):
            with CaptureQueriesContext(connection) as captured:
                start = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - start)
            assert response.status_code == 200
            assert response.content.count(b'data-status="pending"') == 3
            queries.add(len(captured))
        p50, p99 = report(f"  {messages} messages, 3 cards", times, width=30)
        print(f"  {'':30} queries per request: {sorted(queries)}; first request "
              f"(finished runs' HTML and markdown not cached yet): {cold:.1f} ms")


CARD_WATCH = """
window.__cards = {};
new MutationObserver(() => {
  for (const card of document.querySelectorAll('.card[data-status=pending]')) {
    const id = card.dataset.interruptId;
    if (!(id in window.__cards)) {
      window.__cards[id] = null;
      requestAnimationFrame(() => {
        window.__cards[id] = performance.timeOrigin + performance.now();
      });
    }
  }
}).observe(document, {childList: true, subtree: true});
"""


def finished_at(run_id: str) -> dict[str, float]:
    """interrupt id → timestamp (ms) of the RUN_FINISHED that asked it."""
    import redis

    from streams.keys import counter_key, event_key, run_channel

    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    channel = run_channel(run_id)
    out = {}
    for i in range(1, int(r.get(counter_key(channel)) or 0) + 1):
        raw = r.get(event_key(channel, i))
        if not raw:
            continue
        data = json.loads(raw)["data"]
        event = json.loads(data) if isinstance(data, str) else data
        outcome = event.get("outcome") or {}
        if event.get("type") == "RUN_FINISHED" and outcome.get("type") == "interrupt":
            for item in outcome["interrupts"]:
                out[item["id"]] = event["timestamp"]
    return out


def card_latency(db_url: str, cards: int) -> None:
    from playwright.sync_api import sync_playwright

    owner = get_user_model().objects.get(username="bench-owner")
    os.environ["DATABASE_URL"] = db_url
    queue = f"agentsite-bench-pages-{os.getpid()}"
    from agentsite.celery import app as celery_app

    celery_app.conf.task_default_queue = queue
    samples: list[float] = []
    executable = "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None
    with Stack(queue) as stack, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        # bypass_csp: Playwright's wait_for_function polls with eval, which the CSP forbids.
        context = browser.new_context(base_url=stack.base_url, bypass_csp=True)
        context.add_init_script(CARD_WATCH)
        page = context.new_page()
        page.goto("/accounts/login/")
        page.fill("#id_username", owner.username)
        page.fill("#id_password", "pw-bench-owner")
        page.click("button[type=submit]")
        page.wait_for_url(f"{stack.base_url}/")
        while len(samples) < cards:
            page.goto("/new/dev/")
            page.click("#new-chat-form button[type=submit]")
            page.wait_for_selector(".card[data-status=pending].card--input", timeout=90_000)
            run_id = page.locator("#chat").get_attribute("data-run-id")
            page.fill(".card[data-status=pending] input[name=value]", "Bench")
            page.click(".card[data-status=pending] button[type=submit]")
            for kind, answer in (("select", "label:has-text('Red')"),
                                 ("multiSelect", "label:has-text('Logging')"),
                                 ("approval", None)):
                card = page.locator(f".card[data-status=pending].card--{kind}")
                card.wait_for()
                interrupt_id = card.get_attribute("data-interrupt-id")
                page.wait_for_function(f"window.__cards['{interrupt_id}'] !== null")
                shown = page.evaluate(f"window.__cards['{interrupt_id}']")
                asked = finished_at(run_id).get(interrupt_id)
                if asked is not None:
                    samples.append((shown - asked) / 1000)
                if answer:
                    card.locator(answer).click()
                    card.locator("button[type=submit]").click()
                else:
                    card.locator("button[value=approve]").click()
            page.wait_for_selector("#run-status.status--completed")
        browser.close()
    samples = samples[:cards]
    print("RUN_FINISHED(interrupt) → card visible in Chromium (live server + worker):")
    report("  new card", samples, width=30)
    print(f"  {'':30} min={min(samples) * 1000:.1f} ms  max={max(samples) * 1000:.1f} ms  "
          f"p90={percentile(samples, 90) * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--cards", type=int, default=20)
    args = parser.parse_args()
    db_url = use_database(BENCH_DB, fresh=True)
    server_time(args.samples)
    card_latency(db_url, args.cards)


if __name__ == "__main__":
    main()

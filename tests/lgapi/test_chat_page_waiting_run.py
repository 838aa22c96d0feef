"""A thread with a run waiting behind a paused one (LangGraph's
``multitask_strategy="enqueue"``, ``runs.queue``): the chat page, its composer, the
and an AG-UI connect follow the paused run (its status, its card, its
live events), not the queued one, so its question is still answered there."""

from __future__ import annotations

import re

import httpx
import pytest
from django.test import Client

from runs.models import AgentRun
from tests.agui_client import interrupts, post_events

pytestmark = pytest.mark.django_db(transaction=True)


def test_paused_run_answerable_while_another_waits(lg, api, users):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    (question,) = client.runs.wait(tid, "dev", input={"topic": "first"})["__interrupt__"]
    queued = client.runs.create(tid, "dev", input={"topic": "second"},
                                multitask_strategy="enqueue")
    paused = AgentRun.objects.get(interrupts__interrupt_id=question["id"])
    assert AgentRun.objects.get(pk=queued["run_id"]).status == "waiting"

    page = Client()
    page.force_login(users["owner"])
    html = page.get(f"/c/{tid}/").content.decode()
    # The page follows the paused run: its status, its live events, its card.
    head = re.search(r'data-queue-url="[^"]*" data-run-id="([^"]*)"\s+data-run-status="(\w*)"',
                     html)
    assert head is not None and head.groups() == (str(paused.id), "paused"), head
    assert f"/c/{tid}/answer/{question['id']}/" in html
    # Its composer says what the paused run needs (not "send a message").
    assert "Answer the question above to continue." in html
    composer = page.get(f"/c/{tid}/composer/").content.decode()
    assert "Answer the question above to continue." in composer

    # An AG-UI client connecting to the thread is shown the paused run's question (a
    # stream of the queued run would wait for it to start: here, until the read timeout).
    agui = api("owner")
    agui.timeout = httpx.Timeout(10)
    events = post_events(agui, "/agui/dev/connect/", {"threadId": tid, "runId": "r-1"})
    assert [i["id"] for i in interrupts(events)] == [question["id"]]

    answered = page.post(f"/c/{tid}/answer/{question['id']}/", {"value": "Ada"})
    assert answered.status_code in (200, 302), answered.content[:300]
    assert client.runs.join(tid, str(paused.id))["name"] == "Ada"
    assert AgentRun.objects.get(pk=queued["run_id"]).status == "waiting"

"""Threads of the LangGraph API on the chat pages: an empty thread (no agent yet) and the
conversation list render, and a run started with langgraph-sdk is answered on its chat
page while the SDK client waits on it (join)."""

from __future__ import annotations

import pytest
from django.test import Client

from hitl.models import AgentInterrupt
from runs.models import AuditLog

pytestmark = pytest.mark.django_db(transaction=True)


def test_sdk_thread_on_the_chat_page(lg, users):
    client = lg("owner")
    page = Client()
    page.force_login(users["owner"])
    empty = client.threads.create()["thread_id"]
    assert page.get(f"/c/{empty}/").status_code == 200
    assert page.get("/").status_code == 200
    # A message sent on the page to a thread no agent runs yet: refused, nothing started.
    refused = page.post(f"/c/{empty}/send/", {"message": "hi"})
    assert refused.status_code == 400

    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "dev", input={"messages": [{"role": "user", "content": "hi"}]})
    (question,) = out["__interrupt__"]
    chat = page.get(f"/c/{tid}/")
    assert chat.status_code == 200 and question["id"].encode() in chat.content
    answered = page.post(f"/c/{tid}/answer/{question['id']}/", {"value": "Lyra"})
    assert answered.status_code in (200, 302), answered.content[:300]
    run_id = AgentInterrupt.objects.get(interrupt_id=question["id"]).run_id
    out = client.runs.join(tid, str(run_id))
    assert out["name"] == "Lyra" and out["__interrupt__"][0]["value"]["type"] == "select"
    assert AuditLog.objects.get(run_id=run_id, action="decision").surface == "page"

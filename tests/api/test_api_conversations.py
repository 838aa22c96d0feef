"""Conversations and their messages, with the thread's pending interrupt."""

from __future__ import annotations

import pytest

from tests.helpers import answer_and_wait, pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_messages_and_thread_state_follow_the_run(api):
    client = api("owner")
    run = wait_run(client, start_run(client, message="collect, please")["id"], "paused")
    conversations = client.get("/api/conversations/").json()
    assert [c["id"] for c in conversations["results"]] == [run["thread_id"]]
    assert conversations["results"][0]["title"] == "collect, please"

    url = f"/api/conversations/{run['thread_id']}/messages/"
    body = client.get(url).json()
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["messages"][0]["content"] == "collect, please"
    assert body["thread_state"]["pending_interrupt"]["interrupt_id"] == \
        pending(run)["interrupt_id"]
    assert body["thread_state"]["active_run_id"] == run["id"]

    for payload in ({"value": "Conv"}, {"value": "blue"}, {"values": ["alerts"]},
                    {"approved": True}):
        run = answer_and_wait(client, run, payload)
    body = client.get(url).json()
    assert body["thread_state"] == {"pending_interrupt": None, "active_run_id": None}
    assert "Conv" in body["messages"][1]["content"]
    assert body["messages"][1]["id"] == run["assistant_message_id"]

    # A second run on the same thread adds its messages to the same conversation.
    second = start_run(client, thread_id=run["thread_id"], message="again")
    wait_run(client, second["id"], "paused")
    body = client.get(url).json()
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant"]
    assert client.get("/api/conversations/", params={"agent": "showcase"}).json()["count"] == 0

    assert api("outsider").get(url).status_code == 404
    assert api("outsider").get(f"/api/conversations/{run['thread_id']}/").status_code == 404

"""Starting runs: malformed or hostile bodies get a 4xx naming the problem, no rows written."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, Conversation, Message
from tests.helpers import start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def _counts() -> tuple[int, int, int]:
    return AgentRun.objects.count(), Conversation.objects.count(), Message.objects.count()


@pytest.mark.parametrize("body,status,word", [
    ({}, 400, "agent"),
    ({"agent": "nope"}, 404, "unknown agent"),
    ({"agent": "dev", "input": {"topic": ""}}, 400, "topic"),
    ({"agent": "dev", "input": {"topic": "x" * 201}}, 400, "topic"),
    ({"agent": "dev", "input": {"surprise": 1}}, 400, "surprise"),
    ({"agent": "dev", "input": [1, 2]}, 400, "object"),
    ({"agent": "dev", "input": "topic"}, 400, "object"),
    ({"agent": "dev", "thread_id": "not-a-uuid"}, 400, "thread_id"),
    ({"agent": "dev", "thread_id": "00000000-0000-0000-0000-000000000000"}, 404, "thread"),
    ({"agent": ["dev"]}, 400, "agent"),
    ({"agent": "dev", "message": None}, 400, "message"),
])
def test_start_rejects_bad_bodies(api, body, status, word):
    client = api("owner")
    before = _counts()
    r = client.post("/api/runs/", json=body)
    assert r.status_code == status, r.text
    assert word in r.text
    assert set(r.json()) >= {"code", "detail"}
    assert _counts() == before


def test_start_rejects_non_json(api):
    client = api("owner")
    before = _counts()
    for content, ctype in [(b"{", "application/json"), (b"\xff\xfe", "application/json"),
                           (b"agent=dev", "text/plain")]:
        r = client.post("/api/runs/", content=content, headers={"Content-Type": ctype})
        assert r.status_code in (400, 415), (content, r.status_code, r.text)
        assert "detail" in r.json()
    assert _counts() == before


def test_busy_thread_is_409_naming_the_pending_interrupt(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    before = _counts()
    r = client.post("/api/runs/", json={"agent": "dev", "thread_id": run["thread_id"]})
    assert r.status_code == 409
    body = r.json()
    assert body["code"] == "thread_busy" and body["run_id"] == run["id"]
    assert body["pending_interrupt_ids"] == [run["pending_interrupts"][0]["interrupt_id"]]
    assert _counts() == before
    r = client.post("/api/runs/", json={"agent": "showcase", "thread_id": run["thread_id"]})
    assert r.status_code == 409 and r.json()["code"] == "agent_mismatch"


def test_unknown_ids_are_404(api):
    client = api("owner")
    for url in ("/api/runs/not-a-uuid/", "/api/runs/00000000-0000-0000-0000-000000000000/",
                "/api/interrupts/123/"):
        r = client.get(url)
        assert r.status_code == 404, (url, r.text)
    r = client.post("/api/runs/not-a-uuid/resume/", json={"interrupt_id": "x", "payload": {}})
    assert r.status_code == 404


def test_agents_list_shows_schema(api):
    agents = {a["name"]: a for a in api("owner").get("/api/agents/").json()}
    assert {"dev", "showcase"} <= set(agents)
    assert agents["dev"]["input_schema"]["properties"]["topic"]["maxLength"] == 200
    assert agents["dev"]["version"]
    assert start_run  # the module's helpers stay in use

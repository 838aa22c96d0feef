"""Every role at the door (owner, reviewer, outsider, anonymous) sees what REST would show
them, and hostile input on every endpoint is a 4xx in the Platform's error shape
(``{"detail": ...}``), never a 5xx, with nothing consumed."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from django.conf import settings

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def paused(lg) -> dict:
    client = lg("owner")
    tid = client.threads.create(metadata={"who": "owner"})["thread_id"]
    out = client.runs.wait(tid, "dev", input={"topic": "access"})
    assert out["__interrupt__"][0]["value"]["type"] == "input"
    run = AgentRun.objects.get(thread_id=tid)
    return {"thread_id": tid, "run_id": str(run.id)}


def _http(live, token: str | None, scheme: str = "Bearer") -> httpx.Client:
    headers = {"Authorization": f"{scheme} {token}"} if token else {}
    return httpx.Client(base_url=live["base_url"] + "/lg", headers=headers, timeout=30)


def _status(call) -> int:
    try:
        call()
    except httpx.HTTPStatusError as err:  # runs.wait / join raise httpx's error
        return err.response.status_code
    except Exception as err:  # noqa: BLE001 - the SDK's typed errors
        return err.status_code
    return 200


def test_outsider_sees_nothing_of_the_owners_thread(lg, paused):
    tid, rid = paused["thread_id"], paused["run_id"]
    outsider = lg("outsider")
    calls = [lambda: outsider.threads.get(tid), lambda: outsider.threads.get_state(tid),
             lambda: outsider.threads.get_history(tid),
             lambda: outsider.threads.update(tid, metadata={"x": 1}),
             lambda: outsider.threads.delete(tid),
             lambda: outsider.runs.list(tid), lambda: outsider.runs.get(tid, rid),
             lambda: outsider.runs.join(tid, rid), lambda: outsider.runs.cancel(tid, rid),
             lambda: list(outsider.runs.join_stream(tid, rid)),
             lambda: outsider.runs.wait(tid, "dev", command={"resume": {"value": "x"}}),
             lambda: outsider.runs.wait(tid, "dev", input={}),
             lambda: outsider.runs.wait(tid, "dev", input={}, if_not_exists="create")]
    assert [_status(c) for c in calls] == [404] * len(calls)
    assert outsider.threads.search() == [] and outsider.threads.count() == 0
    assert AgentInterrupt.objects.get(run_id=rid).status == "pending"
    assert AgentRun.objects.count() == 1


def test_reviewer_reads_and_answers_but_lists_and_starts_only_their_own(lg, paused):
    tid, rid = paused["thread_id"], paused["run_id"]
    reviewer = lg("reviewer")
    assert reviewer.threads.get(tid)["status"] == "interrupted"
    assert reviewer.threads.get_state(tid)["interrupts"][0]["value"]["type"] == "input"
    assert reviewer.runs.get(tid, rid)["status"] == "interrupted"
    assert reviewer.threads.search() == []  # as the REST list: their own threads
    assert _status(lambda: reviewer.threads.update(tid, metadata={"x": 1})) == 404
    out = reviewer.runs.wait(tid, "dev", command={"resume": {"value": "Rigel"}})
    assert out["name"] == "Rigel"
    decision = AuditLog.objects.get(run_id=rid, action="decision")
    assert (decision.actor_label, decision.surface) == ("reviewer", "langgraph")
    assert lg("owner").threads.get_state(tid)["values"]["name"] == "Rigel"


def test_tokens_from_every_header_and_anonymous(live, users, paused):
    tid = paused["thread_id"]
    for scheme in ("Bearer", "Token"):
        with _http(live, users["owner_token"], scheme) as client:
            assert client.get(f"/threads/{tid}").json()["thread_id"] == tid
    with httpx.Client(base_url=live["base_url"] + "/lg", timeout=30,
                      headers={"X-Api-Key": users["owner_token"]}) as client:
        assert client.get(f"/threads/{tid}").status_code == 200
    for token in (None, "not-a-token"):
        with _http(live, token) as client:
            for response in (client.get(f"/threads/{tid}"), client.post("/threads", json={}),
                             client.get("/info")):
                assert response.status_code == 401 and response.json()["detail"]


def test_hostile_input_is_a_4xx_and_consumes_nothing(live, users, paused):
    tid, rid = paused["thread_id"], paused["run_id"]
    runs = f"/threads/{tid}/runs"
    big = "x" * (settings.ANSWER_MAX_BYTES + 10)
    deep: object = "x"
    for _ in range(100):
        deep = [deep]
    cases = [
        ("POST", "/threads", {"thread_id": "nope"}, 422),
        ("POST", "/threads", {"metadata": []}, 422),
        ("POST", "/threads", {"if_exists": "maybe"}, 422),
        ("POST", "/threads", {"thread_id": tid}, 409),
        ("POST", "/threads", {"supersteps": [{"updates": []}]}, 422),
        ("POST", "/threads/search", {"limit": -1}, 422),
        ("POST", "/threads/search", {"limit": "many"}, 422),
        ("POST", "/threads/search", {"status": "sleeping"}, 422),
        ("POST", "/threads/search", {"values": {"a": 1}}, 422),
        ("POST", "/threads/search", {"sort_by": "mood"}, 422),
        ("POST", "/threads/search", {"ids": ["x"]}, 422),
        ("POST", "/threads/count", {"metadata": "x"}, 422),
        ("GET", "/threads/not-a-uuid", None, 422),
        ("GET", f"/threads/{uuid.uuid4()}", None, 404),
        ("PATCH", f"/threads/{tid}", {"metadata": 5}, 422),
        ("DELETE", f"/threads/{tid}", None, 409),
        ("POST", f"/threads/{tid}/state", {"values": {"name": "x"}}, 422),
        ("GET", f"/threads/{tid}/state/{uuid.uuid4()}", None, 404),
        ("POST", f"/threads/{tid}/history", {"limit": 0}, 422),
        ("POST", runs, {"assistant_id": 5}, 422),
        ("POST", runs, {}, 422),
        ("POST", runs, {"assistant_id": "nobody"}, 404),
        ("POST", runs, {"assistant_id": "dev", "input": "x"}, 422),
        ("POST", runs, {"assistant_id": "dev", "input": {"topic": ""}}, 422),
        ("POST", runs, {"assistant_id": "dev", "input": {"topic": "ok"}}, 409),  # busy
        ("POST", runs, {"assistant_id": "dev", "stream_mode": "bogus"}, 422),
        ("POST", runs, {"assistant_id": "dev", "command": {"goto": "x"}}, 422),
        ("POST", runs, {"assistant_id": "dev", "checkpoint_id": "x"}, 422),
        ("POST", runs, {"assistant_id": "dev", "interrupt_before": ["x"]}, 422),
        ("POST", runs, {"assistant_id": "dev", "multitask_strategy": "later"}, 422),
        ("POST", runs, {"assistant_id": "dev", "multitask_strategy": ["enqueue"]}, 422),
        ("POST", runs, {"assistant_id": "dev", "stream_subgraphs": "perhaps"}, 422),
        ("POST", runs, {"assistant_id": "dev", "webhook": {"url": "x"}}, 422),
        ("POST", runs, {"assistant_id": "dev", "webhook": "gopher://example.com/"}, 422),
        ("POST", runs, {"assistant_id": "dev", "webhook": "http://127.0.0.2:1/x"}, 422),
        ("POST", runs, {"assistant_id": "dev", "input": {"topic": 5},
                        "multitask_strategy": "enqueue"}, 422),
        ("POST", runs, {"assistant_id": "showcase", "input": {},
                        "multitask_strategy": "enqueue"}, 409),  # the thread's agent is dev
        ("POST", runs, {"assistant_id": "dev", "command": {"resume": {"value": "a"}},
                        "input": {}}, 422),
        ("POST", runs + "/wait", {"assistant_id": "dev", "command": {"resume": big}}, 422),
        ("POST", runs + "/wait", {"assistant_id": "dev", "command": {"resume": {"v": 1}}},
         422),
        ("POST", runs + "/stream", {"assistant_id": "dev",
                                    "command": {"resume": {"value": 7}}}, 422),
        ("POST", runs + "/stream", {"assistant_id": "dev", "command": {"resume": deep}}, 422),
        ("POST", runs + "/wait", {"assistant_id": "showcase",
                                  "command": {"resume": {"value": "a"}}}, 409),
        ("POST", runs + "/wait", {"assistant_id": "dev", "input": {"topic": "a\u0000b"}},
         422),
        ("POST", "/runs/wait", {"assistant_id": "dev", "input": {"unknown": 1}}, 422),
        ("POST", "/runs/wait", {"assistant_id": "dev", "input": {"messages": [
            {"role": "user", "content": [{"type": "text", "text": 5}, 7]}], "x": 1}}, 422),
        ("POST", "/runs/wait", {"assistant_id": "dev", "input": {"messages": 5}}, 422),
        ("POST", "/runs/stream", {"assistant_id": "nobody"}, 404),
        ("GET", f"{runs}?limit=x", None, 422),
        ("GET", f"{runs}/not-a-uuid", None, 422),
        ("GET", f"{runs}/{uuid.uuid4()}", None, 404),
        ("DELETE", f"{runs}/{rid}", None, 409),
        ("POST", f"{runs}/{rid}/cancel?action=explode", None, 422),
        ("GET", f"{runs}/{rid}/stream?stream_mode=bogus", None, 422),
        ("POST", "/assistants/search", {"limit": "many"}, 422),
        ("GET", "/assistants/nobody", None, 404),
        ("GET", "/assistants/nobody/schemas", None, 404),
        ("POST", "/assistants", {"graph_id": "dev"}, 501),
        ("PATCH", "/assistants/dev", {"metadata": {}}, 501),
        ("POST", "/crons/search", {}, 501),
        ("POST", "/threads/prune", {"thread_ids": [tid]}, 501),
        ("POST", f"{runs}/crons", {"assistant_id": "dev", "schedule": "* * * * *"}, 501),
        ("GET", f"/threads/{tid}/stream", None, 501),
        ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": {}}, 501),
        ("POST", "/threads/search/extra", {}, 404),
        ("GET", "/nothing/here", None, 404),
        ("PUT", "/threads", {}, 405),
        # What Postgres cannot hold, in a query string or the path: the form guard's 400,
        # in the Platform's shape.
        ("GET", f"{runs}?status=%00", None, 400),
        ("GET", "/threads/%00/state", None, 400),
    ]
    got = []
    with _http(live, users["owner_token"]) as client:
        for method, path, body, _ in cases:
            response = client.request(method, path, json=body)
            detail = response.json().get("detail") if response.headers.get(
                "content-type", "").startswith("application/json") else None
            got.append((method, path[:60], response.status_code, isinstance(detail, str)))
        raws = [(b"{not json", 422), (b'{"assistant_id": "dev"', 422), (b"[1, 2]", 422),
                (b"x" * (3 * 1024 * 1024), 413)]
        for raw, _ in raws:
            response = client.post(runs + "/wait", content=raw,
                                   headers={"Content-Type": "application/json"})
            got.append(("POST", f"raw {raw[:12]!r}", response.status_code,
                        isinstance(response.json().get("detail"), str)))
    expected = [(m, p[:60], s, True) for m, p, _, s in cases] + [
        ("POST", f"raw {raw[:12]!r}", s, True) for raw, s in raws]
    assert got == expected, json.dumps([g for g in got if g not in expected], indent=1)
    assert AgentInterrupt.objects.get(run_id=rid).status == "pending"
    assert not AuditLog.objects.filter(action="decision").exists()
    assert AgentRun.objects.count() == 1

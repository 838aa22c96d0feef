"""The other shipped agents through langgraph-sdk: `tasklist` (async client), `stock`,
`showcase` (every one of our kinds, a bad answer of each refused with nothing consumed)
and `approvals` (two interrupts pending at once: a single value is refused, a map by
interrupt id answers both)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from hitl.models import AgentInterrupt
from tests.hitl.test_invalid_answers import CASES

pytestmark = pytest.mark.django_db(transaction=True)


def test_showcase_every_kind(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "showcase", input={})
    seen = []
    while "__interrupt__" in out:
        (question,) = out["__interrupt__"]
        kind = question["value"]["type"]
        seen.append(kind)
        bad, good = CASES[kind]
        with pytest.raises(httpx.HTTPStatusError) as refused:
            client.runs.wait(tid, "showcase", command={"resume": {question["id"]: bad[0][0]}})
        assert refused.value.response.status_code == 422
        assert AgentInterrupt.objects.get(interrupt_id=question["id"]).status == "pending"
        out = client.runs.wait(tid, "showcase", command={"resume": good})
    assert seen == ["input", "select", "multiSelect", "modal", "unlock", "review", "approval"]
    assert out["outcome"] == "completed"
    assert out["plan"] == {"title": "Release 2", "steps": ["build", "ship"]}


def test_approvals_two_at_once(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "approvals", input={"change": "Ship v2"})
    asked = out["__interrupt__"]
    assert len(asked) == 2
    state = client.threads.get_state(tid)
    assert {i["id"] for i in state["interrupts"]} == {i["id"] for i in asked}
    with pytest.raises(httpx.HTTPStatusError) as which:
        client.runs.wait(tid, "approvals", command={"resume": {"approved": True}})
    assert which.value.response.status_code == 422
    assert "map" in which.value.response.json()["detail"]
    out = client.runs.wait(tid, "approvals", command={"resume": {
        i["id"]: {"approved": True} for i in asked}})
    assert "__interrupt__" not in out and out["outcome"] == "completed"


def test_tasklist_strategy_review(lg_async):
    async def flow() -> dict:
        client = lg_async("owner")
        tid = (await client.threads.create())["thread_id"]
        out = await client.runs.wait(tid, "tasklist", input={"messages": [
            {"role": "user", "content": "/tasklist @docs://versions/v1.0.md"}]})
        (review,) = out["__interrupt__"]
        assert review["value"]["type"] == "review"
        assert review["value"]["allowed"] == ["approve", "edit", "reject", "respond"]
        return await client.runs.wait(tid, "tasklist",
                                      command={"resume": {"decision": "approve"}})

    out = asyncio.run(flow())
    assert out["outcome"] == "completed"
    assert [t["days"] for t in out["result"]["tasks"]] == [3, 1, 2]


def test_stock_asks_then_answers(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(tid, "stock", input={}, stream_mode="updates"))
    (question,) = [p.data["__interrupt__"] for p in parts if "__interrupt__" in p.data][-1]
    assert question["value"]["message"] == "Which company or stock code do you mean?"
    out = client.runs.wait(tid, "stock", command={"resume": {"value": "catl"}})
    assert out["result"]["stock"]["ts_code"] == "300750.SZ"

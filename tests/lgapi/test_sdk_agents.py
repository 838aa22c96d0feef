"""The shipped tool-approval `assistant` (async client) and adopter agents as LangChain /
LangGraph users write them (create_agent + HumanInTheLoopMiddleware, response_schema,
an Agent Inbox HumanInterrupt), each answered through langgraph-sdk's command.resume."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from langgraph_sdk.errors import APIStatusError

from runs.models import AgentRun
from tests.adopter_agents import redis_client, tools_key
from workspace.models import Ticket

pytestmark = pytest.mark.django_db(transaction=True)
# runs.wait raises httpx's error, the other calls the SDK's typed one.
REFUSED = (APIStatusError, httpx.HTTPStatusError)


def test_tool_approval_assistant_over_the_async_client(lg_async):
    async def flow() -> tuple[str, list, dict]:
        client = lg_async("owner")
        thread = await client.threads.create()
        tid = thread["thread_id"]
        parts = [p async for p in client.runs.stream(
            tid, "assistant", input={"messages": [
                {"role": "user", "content": "File a ticket about the export failing, urgent"}]},
            stream_mode=["updates", "messages-tuple"])]
        asked = [p.data["__interrupt__"] for p in parts
                 if p.event == "updates" and "__interrupt__" in p.data]
        (review,) = asked[-1]
        assert review["value"]["type"] == "review"
        assert review["value"]["proposal"] == {"title": "the export failing, urgent",
                                               "priority": "high"}
        # Tokens came as LangChain message chunks with their metadata.
        tuples = [p.data for p in parts if p.event == "messages"]
        assert tuples and all(len(t) == 2 for t in tuples)
        # An edit the tool's schema refuses: a 422, nothing consumed.
        with pytest.raises(REFUSED) as bad:
            await client.runs.wait(tid, "assistant", command={"resume": {
                "decision": "edit", "edited": {"title": "x", "priority": "critical"}}})
        assert bad.value.response.status_code == 422
        assert (await client.threads.get(tid))["status"] == "interrupted"
        out = await client.runs.wait(tid, "assistant", command={"resume": {
            "decision": "edit", "edited": {"title": "Export fails", "priority": "low"}}})
        # Consumed once: a second answer finds nothing pending.
        with pytest.raises(REFUSED) as again:
            await client.runs.wait(tid, "assistant", command={"resume": {
                "decision": "approve"}})
        assert again.value.response.status_code == 409
        runs = await client.runs.list(tid)
        return tid, runs, out

    tid, runs, out = asyncio.run(flow())
    ticket = Ticket.objects.get(thread_id=tid)
    assert (ticket.title, ticket.priority) == ("Export fails", "low")
    assert f"Filed ticket #{ticket.pk} (low)" in out["result"]["answer"]
    assert [r["status"] for r in runs] == ["success"]
    assert AgentRun.objects.get(pk=runs[0]["run_id"]).interrupts.get().status == "applied"


def _tools(thread_id: str) -> list[str]:
    return [json.loads(x)["name"] for x in redis_client.lrange(tools_key(thread_id), 0, -1)]


def test_create_agent_with_hitl_middleware(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "adopter_batched", input={"messages": [
        {"role": "user", "content": "email alice, delete the report"}]})
    (request,) = out["__interrupt__"]
    assert [a["name"] for a in request["value"]["action_requests"]] == ["send_email",
                                                                        "delete_file"]
    state = client.threads.get_state(tid)
    assert [i["id"] for i in state["interrupts"]] == [request["id"]]
    with pytest.raises(REFUSED) as bad:
        client.runs.wait(tid, "adopter_batched",
                         command={"resume": {"decisions": [{"type": "approve"}]}})
    assert bad.value.response.status_code == 422 and _tools(tid) == []
    out = client.runs.wait(tid, "adopter_batched", command={"resume": {"decisions": [
        {"type": "approve"}, {"type": "reject", "message": "keep it"}]}})
    assert "__interrupt__" not in out
    assert _tools(tid) == ["send_email"]
    assert out["messages"][-1]["type"] == "ai"


def test_response_schema_interrupt(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(tid, "adopter_typed", input={}, stream_mode="values"))
    (asked,) = [p.data for p in parts if p.event == "values" and "__interrupt__" in p.data]
    question = asked["__interrupt__"][0]
    assert question["value"] == {"question": "Where to?"}
    assert set(question["response_schema"]["properties"]) == {"destination", "nights",
                                                              "smoking"}
    with pytest.raises(REFUSED) as bad:
        client.runs.wait(tid, "adopter_typed",
                         command={"resume": {"destination": "Oslo", "nights": "three"}})
    assert bad.value.response.status_code == 422
    out = client.runs.wait(tid, "adopter_typed",
                           command={"resume": {"destination": "Oslo", "nights": 3}})
    assert out["result"] == {"received": {"type": "Trip", "data": {
        "destination": "Oslo", "nights": 3, "smoking": False}}}


def test_agent_inbox_sequence(lg):
    """As Agent Inbox does it: search the interrupted threads, read one's state, resume
    with the HumanResponse list."""
    client = lg("owner")
    tid = client.threads.create(metadata={"inbox": "yes"})["thread_id"]
    run = client.runs.create(tid, "adopter_inbox", input={})
    client.runs.join(tid, run["run_id"])
    found = client.threads.search(status="interrupted", metadata={"inbox": "yes"})
    assert [t["thread_id"] for t in found] == [tid]
    assert found[0]["metadata"]["graph_id"] == "adopter_inbox"
    (items,) = found[0]["interrupts"].values()
    assert items[0]["value"][0]["action_request"]["action"] == "publish_post"
    assert client.threads.count(status="interrupted", metadata={"inbox": "yes"}) == 1
    state = client.threads.get_state(tid)
    assert state["interrupts"][0]["value"][0]["description"] == "Publish the post?"
    edit = [{"type": "edit", "args": {"action": "publish_post", "args": {"title": "Hi"}}}]
    out = client.runs.wait(tid, "adopter_inbox", command={"resume": edit})
    assert out["result"] == {"received": edit[0]}
    assert client.threads.search(status="interrupted", metadata={"inbox": "yes"}) == []
    assert client.threads.count(status="idle", metadata={"inbox": "yes"}) == 1


def test_per_call_middleware_two_interrupts_by_id(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "adopter_per_call", input={"messages": [
        {"role": "user", "content": "email, delete"}]})
    found = {i["value"]["name"]: i for i in out["__interrupt__"]}
    assert set(found) == {"send_email", "delete_file"}
    assert found["delete_file"]["response_schema"]
    email, delete = found["send_email"]["id"], found["delete_file"]["id"]
    # delete_file may only be approved or rejected: the whole answer is refused.
    with pytest.raises(REFUSED) as bad:
        client.runs.wait(tid, "adopter_per_call", command={"resume": {
            email: {"type": "approve"}, delete: {"type": "respond", "message": "no"}}})
    assert bad.value.response.status_code == 422 and _tools(tid) == []
    out = client.runs.wait(tid, "adopter_per_call", command={"resume": {
        email: {"type": "approve"}, delete: {"type": "reject", "message": "keep it"}}})
    assert "__interrupt__" not in out
    assert _tools(tid) == ["send_email"]

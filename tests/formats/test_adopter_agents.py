"""Agents as LangChain / LangGraph users write them, answered over REST and AG-UI: each
test checks the value the graph received (its ``result``) and which tools ran."""

from __future__ import annotations

import json

import httpx
import pytest

from runs.models import AgentRun, AuditLog
from tests.adopter_agents import ODD_VALUES, redis_client, tools_key
from tests.agui_client import interrupts, resume, run_input, run_segment
from tests.helpers import pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def tools_ran(thread_id: str) -> list[dict]:
    return [json.loads(x) for x in redis_client.lrange(tools_key(thread_id), 0, -1)]


def decide(client: httpx.Client, item: dict, payload, status: str = "resolved"
           ) -> httpx.Response:
    return client.post(f"/api/interrupts/{item['id']}/decision/",
                       json={"payload": payload, "status": status})


def paused(client: httpx.Client, agent: str, **body) -> dict:
    return wait_run(client, start_run(client, agent, **body)["id"], "paused")


def test_plain_string_over_rest(api):
    owner, outsider = api("owner"), api("outsider")
    run = paused(owner, "adopter_string")
    item = pending(run)
    assert item["kind"] == "generic"
    assert item["request"] == "Which mission flies next?"  # verbatim
    assert item["message"] == "Which mission flies next?"
    # Access unchanged: another user does not see it.
    assert decide(outsider, item, "Gemini").status_code == 404
    assert decide(owner, item, None).status_code == 400  # an answer is needed
    assert decide(owner, item, "Apollo").status_code == 202
    done = wait_run(owner, run["id"], "completed")
    assert done["result"] == {"received": "Apollo"}  # not {"value": ...}


def test_question_with_options_over_agui(api):
    client = api("owner")
    body = run_input(messages=[{"id": "u1", "role": "user", "content": "go"}])
    run = run_segment(client, "adopter_options", body)
    (item,) = interrupts(run)
    assert item["metadata"] == {"question": "Pick a colour",
                                "options": ["red", "green", "blue"]}
    assert item["message"] == "Pick a colour"
    run = run_segment(client, "adopter_options", resume(body["threadId"], item["id"], "green"))
    assert run[-1]["result"] == {"status": "completed", "result": {"received": "green"}}


def test_response_schema_over_rest(api):
    owner = api("owner")
    run = paused(owner, "adopter_typed")
    item = pending(run)
    assert item["kind"] == "schema_form"
    assert item["request"] == {"question": "Where to?"}
    assert set(item["response_schema"]["properties"]) == {"destination", "nights", "smoking"}
    bad = decide(owner, item, {"destination": "Oslo", "nights": "three"})
    assert bad.status_code == 400 and "nights" in bad.json()["fields"], bad.text
    assert decide(owner, item, {"destination": "Oslo"}).status_code == 400
    assert decide(owner, item, {"destination": "Oslo", "nights": 3}).status_code == 202
    done = wait_run(owner, run["id"], "completed")
    assert done["result"] == {"received": {"type": "Trip", "data": {
        "destination": "Oslo", "nights": 3, "smoking": False}}}


def test_agent_inbox_over_agui(api):
    client = api("owner")
    body = run_input(messages=[{"id": "u1", "role": "user", "content": "go"}])
    run = run_segment(client, "adopter_inbox", body)
    (item,) = interrupts(run)
    assert item["metadata"] == {"value": [{
        "action_request": {"action": "publish_post", "args": {"title": "Hello"}},
        "config": {"allow_ignore": True, "allow_respond": True, "allow_edit": True,
                   "allow_accept": True}, "description": "Publish the post?"}]}
    assert item["message"] == "Publish the post?"
    wrong = client.post("/agui/adopter_inbox/", json=resume(
        body["threadId"], item["id"], [{"type": "edit", "args": {"action": "other",
                                                                 "args": {}}}]))
    assert wrong.status_code == 400, wrong.text
    edit = [{"type": "edit", "args": {"action": "publish_post", "args": {"title": "Hi"}}}]
    run = run_segment(client, "adopter_inbox", resume(body["threadId"], item["id"], edit))
    assert run[-1]["result"]["result"] == {"received": edit[0]}


def test_batched_middleware_over_rest(api):
    owner = api("owner")
    run = paused(owner, "adopter_batched", message="email alice, delete the report")
    item = pending(run)
    assert item["kind"] == "hitl_request"
    assert [a["name"] for a in item["request"]["action_requests"]] == ["send_email",
                                                                       "delete_file"]
    assert item["request"]["review_configs"][1]["allowed_decisions"] == ["approve", "reject"]
    # What the middleware would refuse is refused here first, naming the field.
    bad = decide(owner, item, {"decisions": [{"type": "approve"}, {"type": "edit"}]})
    assert bad.status_code == 400 and "decisions.1.type" in bad.json()["fields"], bad.text
    assert decide(owner, item, {"decisions": [{"type": "approve"}]}).status_code == 400
    assert decide(owner, item, {"value": "x"}).status_code == 400
    answer = {"decisions": [
        {"type": "edit", "edited_action": {"name": "send_email",
                                           "args": {"to": "bob@example.com", "body": "hi"}}},
        {"type": "reject", "message": "keep the report"}]}
    assert decide(owner, item, answer).status_code == 202
    done = wait_run(owner, run["id"], "completed")
    # send_email ran with the edited arguments; delete_file never ran.
    assert tools_ran(done["thread_id"]) == [
        {"name": "send_email", "args": {"to": "bob@example.com", "body": "hi"}}]
    item = owner.get(f"/api/interrupts/{item['id']}/").json()
    assert item["decision"] == answer and item["status"] == "applied"


def test_per_call_middleware_over_agui(api):
    client = api("owner")
    body = run_input(messages=[{"id": "u1", "role": "user", "content": "email, delete"}])
    run = run_segment(client, "adopter_per_call", body)
    found = {i["metadata"]["name"]: i for i in interrupts(run)}
    assert set(found) == {"send_email", "delete_file"}
    email, delete = found["send_email"], found["delete_file"]
    assert email["metadata"]["type"] == "tool_approval" and email["reason"] == "tool_approval"
    assert email["toolCallId"] == "call_email"
    assert delete["responseSchema"]  # the middleware's own schema, as LangGraph gave it
    thread = body["threadId"]
    # delete_file allows approve / reject only: respond is refused before the graph sees it.
    bad = client.post("/agui/adopter_per_call/", json=run_input(thread, resume=[
        {"interruptId": delete["id"], "status": "resolved",
         "payload": {"type": "respond", "message": "no"}},
        {"interruptId": email["id"], "status": "resolved", "payload": {"type": "approve"}}]))
    assert bad.status_code == 400, bad.text
    run = run_segment(client, "adopter_per_call", run_input(thread, resume=[
        {"interruptId": email["id"], "status": "resolved", "payload": {"type": "approve"}},
        {"interruptId": delete["id"], "status": "cancelled"}]))
    assert run[-1]["outcome"]["type"] == "success", run[-1]
    assert tools_ran(thread) == [{"name": "send_email",
                                  "args": {"to": "alice@example.com", "body": "hi"}}]


def _cancelled_by(run_id: str, username: str, surface: str) -> None:
    ends = AuditLog.objects.filter(run_id=run_id, action=AuditLog.Action.RUN_STATUS,
                                   to_status="cancelled")
    assert [(a.actor_label, a.surface) for a in ends] == [(username, surface)]
    # Nothing recorded the cancel as an answer the graph would get.
    assert not AuditLog.objects.filter(run_id=run_id, action=AuditLog.Action.DECISION).exists()


def test_cancel_without_decline_cancels_the_run_over_rest(api):
    """schema_form: LangGraph would refuse None for a pydantic response_schema (the run
    failed); the cancel cancels the run instead, and the graph never resumes."""
    owner = api("owner")
    run = paused(owner, "adopter_typed")
    item = pending(run)
    answered = decide(owner, item, None, status="cancelled")
    assert answered.status_code == 202, answered.text
    assert answered.json()["status"] == "cancelled"
    done = wait_run(owner, run["id"], "cancelled")
    assert done["result"] is None and done["error"] in (None, "", {}), done
    assert owner.get(f"/api/interrupts/{item['id']}/").json()["status"] == "cancelled"
    _cancelled_by(run["id"], "owner", "api")


def test_cancel_of_approve_only_call_cancels_the_run_over_agui(api):
    """A call that may only be approved: no reject the middleware would accept, so a
    cancelled entry cancels the run (RUN_FINISHED cancelled), and the tool never runs."""
    client = api("owner")
    body = run_input(messages=[{"id": "u1", "role": "user", "content": "delete"}])
    run = run_segment(client, "adopter_approve_only", body)
    (item,) = interrupts(run)
    assert item["metadata"]["action_requests"][0]["name"] == "delete_file"
    run = run_segment(client, "adopter_approve_only", run_input(body["threadId"], resume=[
        {"interruptId": item["id"], "status": "cancelled"}]))
    assert run[-1]["type"] == "RUN_FINISHED", run[-1]
    assert run[-1]["outcome"]["type"] == "cancelled", run[-1]
    assert "delete_file" not in [t["name"] for t in tools_ran(body["threadId"])]
    stored = AgentRun.objects.get(agent="adopter_approve_only")
    assert stored.status == AgentRun.Status.CANCELLED
    _cancelled_by(stored.pk, "owner", "agui")


@pytest.mark.parametrize("which", sorted(ODD_VALUES))
def test_odd_values_never_500(api, which):
    owner, reviewer, outsider = api("owner"), api("reviewer"), api("outsider")
    run = paused(owner, "adopter_odd", input={"which": which})
    item = pending(run)
    assert item["request"] == ODD_VALUES[which]
    assert item["kind"] == "generic"
    for client in (owner, reviewer):
        assert client.get(f"/api/interrupts/{item['id']}/").status_code == 200
        assert client.get("/api/interrupts/", params={"status": "pending"}).status_code == 200
    assert outsider.get(f"/api/interrupts/{item['id']}/").status_code == 404
    events = client.post("/agui/adopter_odd/connect/", json=run_input(run["thread_id"]))
    assert events.status_code == 200
    assert decide(reviewer, item, {"any": ["json", 1]}).status_code == 202
    done = wait_run(owner, run["id"], "completed")
    assert done["result"] == {"received": {"any": ["json", 1]}}


def test_card_cancel_without_decline_cancels_the_run(api, live):
    """The chat page's card: ``_status=cancelled`` on a schema_form question cancels the
    run (the page's run_cancel), audited as the person on the "page" surface."""
    run = paused(api("owner"), "adopter_typed")
    item = pending(run)
    with httpx.Client(base_url=live["base_url"], timeout=30) as browser:
        browser.get("/accounts/login/")
        login = browser.post("/accounts/login/", data={
            "username": "owner", "password": "pw-owner",
            "csrfmiddlewaretoken": browser.cookies["csrftoken"]})
        assert login.status_code == 302, login.text
        browser.get(f"/c/{run['conversation_id']}/")
        response = browser.post(
            f"/c/{run['conversation_id']}/answer/{item['interrupt_id']}/",
            data={"_status": "cancelled"}, headers={"X-CSRFToken": browser.cookies["csrftoken"]})
    assert response.status_code == 302, response.text
    done = AgentRun.objects.get(pk=run["id"])
    assert done.status == AgentRun.Status.CANCELLED and done.result is None
    _cancelled_by(done.pk, "owner", "page")

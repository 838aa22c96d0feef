"""A batched HITLRequest carries no argument schema: the worker stores each tool's with
the question, and an edit is checked against it at every door before anything is
consumed (issue 35 item 2). The card and admin forms: tests/pages/test_tool_edit_forms.py."""

from __future__ import annotations

import httpx
import pytest

from tests.agui_client import interrupts, run_input, run_segment
from tests.formats.test_adopter_agents import decide, paused, tools_ran
from tests.helpers import pending, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = {"to": "alice@example.com", "body": "hi"}


def edit(args: dict, name: str = "send_email") -> dict:
    return {"decisions": [{"type": "edit", "edited_action": {"name": name, "args": args}},
                          {"type": "approve"}]}


def still_pending(client: httpx.Client, item: dict) -> None:
    got = client.get(f"/api/interrupts/{item['id']}/").json()
    assert got["status"] == "pending" and got["decision"] is None, got


def test_bad_edits_refused_over_rest(api):
    owner = api("owner")
    run = paused(owner, "adopter_batched")
    item = pending(run)
    # The tools' argument schemas are kept with the question, and published.
    edit_branch = item["response_schema"]["properties"]["decisions"]["prefixItems"][0][
        "oneOf"][1]
    args = edit_branch["properties"]["edited_action"]["properties"]["args"]
    assert args["required"] == ["to", "body"] and args["additionalProperties"] is False
    # The verbatim value is untouched.
    assert "args_schema" not in item["request"]["review_configs"][0]

    missing = decide(owner, item, edit({"to": "x@example.com"}))
    assert missing.status_code == 400, missing.text
    assert missing.json()["fields"] == {
        "decisions.0.edited_action.args.body": ["required"]}, missing.text
    typed = decide(owner, item, edit({"to": 123, "cc": "extra", "body": "b"}))
    assert typed.status_code == 400, typed.text
    fields = typed.json()["fields"]
    assert set(fields) == {"decisions.0.edited_action.args.to",
                           "decisions.0.edited_action.args.cc"}, fields
    switched = decide(owner, item, edit({"path": "/etc"}, name="delete_file"))
    assert switched.status_code == 400, switched.text
    assert "decisions.0.edited_action.name" in switched.json()["fields"], switched.text
    # The run's own resume door checks the same way.
    via_run = owner.post(f"/api/runs/{run['id']}/resume/", json={
        "interrupt_id": item["interrupt_id"], "payload": edit({"to": "x@example.com"})})
    assert via_run.status_code == 400, via_run.text
    still_pending(owner, item)

    good = edit({"to": "bob@example.com", "body": "edited"})
    assert decide(owner, item, good).status_code == 202
    done = wait_run(owner, run["id"], "completed")
    # The two calls run in parallel: in either order.
    assert sorted(tools_ran(done["thread_id"]), key=lambda t: t["name"]) == [
        {"name": "delete_file", "args": {"path": "/tmp/report"}},
        {"name": "send_email", "args": {"to": "bob@example.com", "body": "edited"}}]


def test_bad_edit_refused_over_agui(api):
    client = api("owner")
    body = run_input(messages=[{"id": "u1", "role": "user", "content": "go"}])
    (item,) = interrupts(run_segment(client, "adopter_batched", body))
    args = item["responseSchema"]["properties"]["decisions"]["prefixItems"][0]["oneOf"][1][
        "properties"]["edited_action"]["properties"]["args"]
    assert set(args["properties"]) == {"to", "body"}
    refused = client.post("/agui/adopter_batched/", json=run_input(body["threadId"], resume=[
        {"interruptId": item["id"], "status": "resolved",
         "payload": edit({"to": "x@example.com"})}]))
    assert refused.status_code == 400, refused.text
    assert "body" in refused.text, refused.text
    assert tools_ran(body["threadId"]) == []
    run = run_segment(client, "adopter_batched", run_input(body["threadId"], resume=[
        {"interruptId": item["id"], "status": "resolved", "payload": edit(EMAIL)}]))
    assert run[-1]["outcome"]["type"] == "success", run[-1]
    assert sorted(t["name"] for t in tools_ran(body["threadId"])) == ["delete_file",
                                                                      "send_email"]

"""Tool approval (hitl/tool_approval.py) on the assistant's file_ticket tool: a rejected
call never runs, an edited call runs with the edited, validated arguments."""

from __future__ import annotations

import pytest

from tests.helpers import answer, answer_and_wait, pending, published_events, start_run, wait_run
from workspace.models import Ticket

pytestmark = pytest.mark.django_db(transaction=True)


def _ticket_request(client) -> dict:
    run = start_run(client, "assistant", message="File a ticket about the export failing, urgent")
    run = wait_run(client, run["id"], {"paused", "completed", "failed"})
    review = pending(run)
    assert review["kind"] == "review"
    assert review["reason"] == "tool_approval"
    assert review["request"]["message"].startswith("Approve the call to `file_ticket`")
    assert review["request"]["allowed"] == ["approve", "edit", "reject"]
    assert review["request"]["proposal"] == {"title": "the export failing, urgent",
                                             "priority": "high"}
    return run


def test_rejected_tool_call_never_runs(api):
    client = api("owner")
    run = _ticket_request(client)
    run = answer_and_wait(client, run, {"decision": "reject", "reason": "duplicate"})
    assert run["status"] == "completed", run
    assert not Ticket.objects.filter(thread_id=run["thread_id"]).exists()
    results = [e["content"] for e in published_events(run["id"])
               if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["The reviewer rejected this call to file_ticket; it did not run. "
                       "Reason: duplicate"]
    assert run["result"]["answer"].startswith("Understood, I did not do that.")


def test_edited_call_runs_with_the_edited_validated_arguments(api):
    client = api("owner")
    run = _ticket_request(client)
    for bad in ({"title": "x", "priority": "critical"}, {"title": "x"},
                {"title": "x", "priority": "low", "assignee": "me"}):
        response = answer(client, run, {"decision": "edit", "edited": bad})
        assert response.status_code == 400, (bad, response.text)
    assert not Ticket.objects.exists()
    run = answer_and_wait(client, run, {"decision": "edit", "edited": {
        "title": "Export fails for lists over 1000 books", "priority": "low"}})
    assert run["status"] == "completed", run
    ticket = Ticket.objects.get(thread_id=run["thread_id"])
    assert (ticket.title, ticket.priority) == ("Export fails for lists over 1000 books", "low")
    assert f"Filed ticket #{ticket.pk} (low)" in run["result"]["answer"]


def test_approved_call_runs_as_proposed(api):
    client = api("owner")
    run = answer_and_wait(client, _ticket_request(client), {"decision": "approve"})
    assert run["status"] == "completed", run
    ticket = Ticket.objects.get(thread_id=run["thread_id"])
    assert (ticket.title, ticket.priority) == ("the export failing, urgent", "high")


def test_policy_rejects_unknown_decisions_and_tools():
    from agents.assistant import TOOLS
    from hitl.tool_approval import ToolApproval, approval_node

    with pytest.raises(ValueError):
        ToolApproval(allowed=("approve", "ignore"))
    with pytest.raises(ValueError):
        approval_node(TOOLS, {"send_email": ToolApproval()})

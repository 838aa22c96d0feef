"""execution.tool_schemas: the argument schemas a paused batched HITLRequest is stored
with, read from the graph's ToolNodes (issue 35 item 2)."""

from __future__ import annotations

from execution.tool_schemas import for_question, graph_tools
from tests.adopter_agents import hitl_batched_graph, hitl_per_call_build


def request(*names: str) -> dict:
    return {"action_requests": [{"name": n, "args": {}} for n in names],
            "review_configs": [{"action_name": n, "allowed_decisions": ["edit"]}
                               for n in names]}


def test_the_graphs_tools_closed_to_undeclared_arguments():
    found = graph_tools(hitl_batched_graph)
    assert set(found) == {"send_email", "delete_file"}
    assert found["send_email"]["required"] == ["to", "body"]
    assert found["send_email"]["additionalProperties"] is False
    assert graph_tools(hitl_batched_graph) is found  # once per compiled graph


def test_only_the_tools_a_question_names():
    assert set(for_question(hitl_batched_graph, request("send_email"), None)) == {
        "send_email"}
    assert for_question(hitl_batched_graph, request("unknown_tool"), None) is None
    per_call = {"type": "tool_approval", "tool_call_id": "c", "name": "send_email",
                "args": {}, "description": ""}
    # Its response_schema carries the schema already: nothing to add.
    assert for_question(hitl_per_call_build(), per_call, None) is None
    assert for_question(hitl_batched_graph, "a string", None) is None

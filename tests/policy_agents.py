"""Test-only agents for hitl policies: one question whose kind and policy come from the
run's input (the ``hitl_*`` helper keyword arguments), and one agent with a registry
policy (four-eyes, a deadline). The run's result is the answer the graph received.

Registered in tests/agent_catalog.py; only the test worker imports this.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from hitl.ask import hitl_approval, hitl_input, hitl_review
from tests.agent_catalog import AskInput


class AskState(TypedDict, total=False):
    kind: str
    tool: str
    details: dict[str, Any] | None
    policy: dict[str, Any]
    answer: Any
    outcome: str
    result: Any


def ask(state: AskState) -> dict[str, Any]:
    policy, kind = state.get("policy") or {}, state.get("kind", "approval")
    if kind == "approval":
        answer: Any = hitl_approval("Ship it?", details=state.get("details"), **policy)
    elif kind == "review":
        answer = hitl_review("Review the plan", proposal=state.get("details") or {"plan": "A"},
                             allowed=["approve", "reject"], **policy)
    elif kind == "tool":
        answer = hitl_review(f"Approve the call to `{state['tool']}`",
                             proposal=state.get("details") or {}, allowed=["approve", "reject"],
                             reason="tool_approval", tool=state["tool"], **policy)
    else:
        answer = {"value": hitl_input("Name?", **policy)}
    return {"answer": answer, "outcome": "completed", "result": {"answer": answer}}


def build() -> StateGraph:
    graph = StateGraph(AskState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph


def initial_state(data: AskInput, message: str) -> dict[str, Any]:
    return data.model_dump()

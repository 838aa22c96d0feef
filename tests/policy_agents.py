"""Test-only agents for hitl policies: one question whose kind and policy come from the
run's input (the ``hitl_*`` helper keyword arguments), and one agent with a registry
policy (four-eyes, a deadline). The run's result is the answer the graph received.

Loaded by the test worker and server through AGENTSITE_AGENT_MODULES (tests/conftest.py).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict

from hitl.ask import hitl_approval, hitl_input, hitl_review
from runs.registry import Agent, Policy, register


class AskInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str = "approval"  # approval | review | input | tool
    tool: str = "file_ticket"
    details: dict[str, Any] | None = None
    policy: dict[str, Any] = {}


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


def _build() -> StateGraph:
    graph = StateGraph(AskState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph


def _initial(data: AskInput, message: str) -> dict[str, Any]:
    return data.model_dump()


register(Agent(name="policy_ask", version="1", description="one question, policy from input",
               input_model=AskInput, builder=_build, initial_state=_initial))
register(Agent(name="policy_foureyes", version="1",
               description="one question; agent policy: four-eyes",
               input_model=AskInput, builder=_build, initial_state=_initial,
               policy=Policy(requester_may_decide=False)))
register(Agent(name="policy_deadline", version="1",
               description="one question; agent policy: a 1 s deadline",
               input_model=AskInput, builder=_build, initial_state=_initial,
               policy=Policy(timeout=1.0)))
register(Agent(name="policy_quorum", version="1",
               description="one question; agent policy: two approvals",
               input_model=AskInput, builder=_build, initial_state=_initial,
               policy=Policy(required_approvals=2)))

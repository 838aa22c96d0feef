"""``approvals``: a change needs two sign-offs asked at the same time (parallel branches).

Both interrupts are pending together; each may be decided by a different person
(the owner or a reviewer with ``hitl.decide_interrupt``), one at a time or in one
``resume: [...]`` call. The graph resumes only when both are answered.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from agents.catalog import ApprovalsInput
from hitl.ask import hitl_approval

TEAMS = ("legal", "security")


class ApprovalsState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    change: str
    signoffs: Annotated[list[dict[str, Any]], operator.add]
    result: dict[str, Any]
    outcome: str
    outcome_reason: str


def _signoff(team: str):
    def node(state: ApprovalsState) -> dict[str, Any]:
        answer = hitl_approval(f"{team.title()} sign-off: {state['change']}",
                               details={"team": team, "change": state["change"]},
                               reason=f"{team}_signoff")
        return {"signoffs": [{"team": team, **answer}]}

    node.__name__ = f"{team}_signoff"
    return node


def decide(state: ApprovalsState) -> dict[str, Any]:
    signoffs = sorted(state["signoffs"], key=lambda s: s["team"])
    refused = [s for s in signoffs if not s["approved"]]
    verdict = ("approved by " + " and ".join(s["team"] for s in signoffs) if not refused
               else "refused by " + ", ".join(
                   f"{s['team']} ({s.get('reason') or 'no reason'})" for s in refused))
    return {
        "messages": [AIMessage(content=f"{state['change']}: {verdict}.")],
        "result": {"change": state["change"], "signoffs": signoffs},
        "outcome": "rejected" if refused else "completed",
        "outcome_reason": verdict if refused else "",
    }


def build() -> StateGraph:
    graph = StateGraph(ApprovalsState)
    for team in TEAMS:
        node = _signoff(team)
        graph.add_node(node.__name__, node)
        graph.add_edge(START, node.__name__)
    graph.add_node("decide", decide)
    graph.add_edge([f"{team}_signoff" for team in TEAMS], "decide")
    graph.add_edge("decide", END)
    return graph


def initial_state(data: ApprovalsInput, message: str) -> dict[str, Any]:
    return {"change": data.change, "signoffs": []}

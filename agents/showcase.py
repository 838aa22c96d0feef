"""``showcase``: one interrupt of every interaction kind, in a fixed order.

input → select → multiSelect → modal → unlock → review (with an edit schema) → approval.
Useful to try each review card and to exercise validation of every kind end to end.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel

from hitl.ask import (
    hitl_approval,
    hitl_input,
    hitl_modal,
    hitl_multi_select,
    hitl_review,
    hitl_select,
    hitl_unlock,
)

PLAN_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "steps": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
    },
    "required": ["title", "steps"],
    "additionalProperties": False,
}


class ShowcaseState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    answers: Annotated[list[dict[str, Any]], operator.add]
    plan: dict[str, Any]
    result: dict[str, Any]
    outcome: str
    outcome_reason: str


def _step(kind: str, ask):
    def node(state: ShowcaseState) -> dict[str, Any]:
        return {"answers": [{"kind": kind, "answer": ask(state)}]}

    node.__name__ = f"ask_{kind}"
    return node


STEPS = [
    _step("input", lambda s: hitl_input("Name the release", placeholder="v1.0")),
    _step("select", lambda s: hitl_select("Pick a channel", ["stable", "beta", "nightly"])),
    _step("multiSelect", lambda s: hitl_multi_select(
        "Pick platforms", ["linux", "macos", "windows"], min=1, max=2)),
    _step("modal", lambda s: hitl_modal("Heads up", "Release notes are missing.",
                                        [{"label": "Continue", "value": "continue"},
                                         {"label": "Write them", "value": "write"}])),
    _step("unlock", lambda s: hitl_unlock("Unlock the signing key", key="signing-key")),
]


def review_plan(state: ShowcaseState) -> dict[str, Any]:
    proposal = state.get("plan") or {"title": "Release", "steps": ["build", "sign", "publish"]}
    answer = hitl_review("Review the release plan", proposal=proposal,
                         allowed=["approve", "edit", "reject"], edit_schema=PLAN_SCHEMA)
    plan = answer["edited"] if answer["decision"] == "edit" else proposal
    return {"answers": [{"kind": "review", "answer": answer}], "plan": plan}


def approve(state: ShowcaseState) -> dict[str, Any]:
    rejected = state["answers"][-1]["answer"]["decision"] == "reject"
    if rejected:
        return {"outcome": "rejected", "outcome_reason": "plan rejected in review",
                "result": {"answers": state["answers"]}}
    answer = hitl_approval("Ship it?", details=state["plan"])
    answers = state["answers"] + [{"kind": "approval", "answer": answer}]
    text = "Shipped." if answer["approved"] else "Not shipped."
    return {"answers": [{"kind": "approval", "answer": answer}],
            "messages": [AIMessage(content=text)],
            "outcome": "completed" if answer["approved"] else "rejected",
            "result": {"answers": answers, "plan": state["plan"]}}


def build() -> StateGraph:
    graph = StateGraph(ShowcaseState)
    names = []
    for node in STEPS:
        graph.add_node(node.__name__, node)
        names.append(node.__name__)
    graph.add_node("review_plan", review_plan)
    graph.add_node("approve", approve)
    names += ["review_plan", "approve"]
    graph.add_edge(START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        graph.add_edge(a, b)
    graph.add_edge(names[-1], END)
    return graph


def initial_state(data: BaseModel, message: str) -> dict[str, Any]:
    return {"answers": []}

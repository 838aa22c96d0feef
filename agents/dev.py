"""``dev``: the seed's ``collectHitlDemo`` — input → select → multiSelect → approval → summary."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from agents.catalog import DevInput
from hitl.ask import hitl_approval, hitl_input, hitl_multi_select, hitl_select

COLORS = [{"label": "Red", "value": "red"}, {"label": "Green", "value": "green"},
          {"label": "Blue", "value": "blue"}]
EXTRAS = [{"label": "Logging", "value": "logging"}, {"label": "Metrics", "value": "metrics"},
          {"label": "Tracing", "value": "tracing"}, {"label": "Alerts", "value": "alerts"}]


class DevState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    topic: str
    name: str
    color: str
    extras: list[str]
    approval: dict[str, Any]
    # Each node appends its name once it completes: a node that ran twice shows up twice.
    trace: Annotated[list[str], operator.add]
    result: dict[str, Any]
    outcome: str
    outcome_reason: str


def ask_name(state: DevState) -> dict[str, Any]:
    name = hitl_input(f"What should we call {state['topic']}?", placeholder="e.g. Apollo")
    return {"name": name, "trace": ["ask_name"]}


def ask_color(state: DevState) -> dict[str, Any]:
    color = hitl_select(f"Pick a color for {state['name']}", COLORS)
    return {"color": color, "trace": ["ask_color"]}


def ask_extras(state: DevState) -> dict[str, Any]:
    extras = hitl_multi_select("Which extras should it ship with?", EXTRAS, min=1, max=3)
    return {"extras": extras, "trace": ["ask_extras"]}


def ask_approval(state: DevState) -> dict[str, Any]:
    answer = hitl_approval(
        f"Create {state['name']} ({state['color']}) with {', '.join(state['extras'])}?",
        details={"name": state["name"], "color": state["color"], "extras": state["extras"]},
    )
    return {"approval": answer, "trace": ["ask_approval"]}


def summarize(state: DevState) -> dict[str, Any]:
    approved = state["approval"]["approved"]
    reason = state["approval"].get("reason") or ""
    verdict = "approved" if approved else f"rejected ({reason or 'no reason given'})"
    text = (f"Summary for {state['topic']}: name **{state['name']}**, color {state['color']}, "
            f"extras {', '.join(state['extras'])}; {verdict}.")
    result = {"name": state["name"], "color": state["color"], "extras": state["extras"],
              "approved": approved, "reason": reason}
    return {
        "messages": [AIMessage(content=text)],
        "result": result,
        "outcome": "completed" if approved else "rejected",
        "outcome_reason": "" if approved else (reason or "not approved"),
        "trace": ["summarize"],
    }


def build() -> StateGraph:
    graph = StateGraph(DevState)
    for node in (ask_name, ask_color, ask_extras, ask_approval, summarize):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "ask_name")
    graph.add_edge("ask_name", "ask_color")
    graph.add_edge("ask_color", "ask_extras")
    graph.add_edge("ask_extras", "ask_approval")
    graph.add_edge("ask_approval", "summarize")
    graph.add_edge("summarize", END)
    return graph


def initial_state(data: DevInput, message: str) -> dict[str, Any]:
    state: dict[str, Any] = {"topic": data.topic, "trace": []}
    if message:
        state["messages"] = [HumanMessage(content=message)]
    return state

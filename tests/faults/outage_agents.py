"""``quiet_outage``: work → ask (one input question) → finish, each of work and finish
sleeping ``OUTAGE_STEP_SECONDS`` (default 3) and touching nothing but the graph's state:
unlike tests/slow_agents.py (whose steps write to Redis), a step keeps going while Redis
is down, so a segment can pause or finish in a Redis outage."""

from __future__ import annotations

import os
import time
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from hitl.ask import hitl_input

STEP = float(os.environ.get("OUTAGE_STEP_SECONDS", "3"))


class QuietState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    name: str
    result: dict[str, Any]


def work(state: QuietState) -> dict[str, Any]:
    time.sleep(STEP)
    return {}


def ask(state: QuietState) -> dict[str, Any]:
    return {"name": hitl_input("Name it", placeholder="any")}


def finish(state: QuietState) -> dict[str, Any]:
    time.sleep(STEP)
    return {"messages": [AIMessage(content=f"Named it {state['name']}.")],
            "result": {"name": state["name"]}}


def build() -> StateGraph:
    graph = StateGraph(QuietState)
    for node in (work, ask, finish):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "work")
    graph.add_edge("work", "ask")
    graph.add_edge("ask", "finish")
    graph.add_edge("finish", END)
    return graph


def initial_state(data: Any, message: str) -> dict[str, Any]:
    return {}

"""Test-only agent whose graph raises after its first question is answered.

Registered in tests/agent_catalog.py; only the test worker imports this.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from hitl.ask import hitl_input


class FaultyState(TypedDict, total=False):
    answer: str


def ask(state: FaultyState) -> dict[str, Any]:
    return {"answer": hitl_input("Say something")}


def explode(state: FaultyState) -> dict[str, Any]:
    raise RuntimeError(f"boom after {state['answer']!r}")


def build() -> StateGraph:
    graph = StateGraph(FaultyState)
    graph.add_node("ask", ask)
    graph.add_node("explode", explode)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "explode")
    graph.add_edge("explode", END)
    return graph


def initial_state(data: BaseModel, message: str) -> dict[str, Any]:
    return {}

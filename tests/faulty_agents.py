"""Test-only agent whose graph raises after its first question is answered.

Loaded by the test worker and server through AGENTSITE_AGENT_MODULES (tests/conftest.py).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict

from hitl.ask import hitl_input
from runs.registry import Agent, register


class FaultyInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


register(Agent(name="faulty", version="1", description="raises after one answer (tests)",
               input_model=FaultyInput, builder=build,
               initial_state=lambda data, message: {}))

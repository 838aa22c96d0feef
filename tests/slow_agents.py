"""A test-only agent whose steps take time, for the fault tests (tests/faults/): a
worker killed at a random moment is then likely to be mid-step.

``slow_counted``: work1 → work2 → ask (one input question) → work3 → work4, each work
step sleeping ``SLOW_STEP_SECONDS`` (default 0.3). Each node is logged by the call
log of tests/counting_agents.py, and each work step records its effect once it is
done in the Redis list ``effects:<thread_id>`` (a side effect outside the graph).
"""

from __future__ import annotations

import operator
import os
import time
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from hitl.ask import hitl_input
from tests.agent_catalog import SlowInput
from tests.counting_agents import CountedGraph, _redis

STEP = float(os.environ.get("SLOW_STEP_SECONDS", "0.3"))


class SlowState(TypedDict, total=False):
    topic: str
    name: str
    trace: Annotated[list[str], operator.add]
    result: Any


def _work(name: str):
    def node(state: SlowState, config: RunnableConfig) -> dict[str, Any]:
        time.sleep(STEP)
        _redis.rpush(f"effects:{config['configurable']['thread_id']}", name)
        out: dict[str, Any] = {"trace": [name]}
        if name == "work4":
            out["result"] = {"name": state.get("name"), "trace": [*state["trace"], name]}
        return out

    node.__name__ = name
    return node


def ask(state: SlowState) -> dict[str, Any]:
    return {"name": hitl_input("Name it", placeholder="any"), "trace": ["ask"]}


def build() -> StateGraph:
    graph = CountedGraph(SlowState)
    for name in ("work1", "work2"):
        graph.add_node(name, _work(name))
    graph.add_node("ask", ask)
    for name in ("work3", "work4"):
        graph.add_node(name, _work(name))
    graph.add_edge(START, "work1")
    graph.add_edge("work1", "work2")
    graph.add_edge("work2", "ask")
    graph.add_edge("ask", "work3")
    graph.add_edge("work3", "work4")
    graph.add_edge("work4", END)
    return graph


def initial_state(data: SlowInput, message: str) -> dict[str, Any]:
    return {"topic": data.topic, "trace": []}

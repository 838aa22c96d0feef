"""A test-only agent whose last step writes the run's final text, for the fault test of
a worker lost between that step's checkpoint and the run's finish
(tests/faults/test_lost_final_message.py).

``lost_summary`` (model_tokens) and ``lost_summary_updates`` (without): draft (writes
"Draft for <topic>. ") → ask (one input question) → summarize (writes "Summary: <topic>
is named <name>.") → linger → end.

``linger`` writes nothing and sleeps ``LINGER_SECONDS`` (default 0) of the worker's
environment: a worker started with it waits after the summary's checkpoint, before the
segment's end, for the test to kill it there. The worker that takes the segment over
runs ``linger`` again (without the wait) and has no text of its own to add.
"""

from __future__ import annotations

import os
import time
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from hitl.ask import hitl_input
from tests.agent_catalog import SlowInput


class SummaryState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    topic: str
    name: str
    result: Any


def draft(state: SummaryState) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"Draft for {state['topic']}. ")]}


def ask(state: SummaryState) -> dict[str, Any]:
    return {"name": hitl_input("Name it", placeholder="any")}


def summarize(state: SummaryState) -> dict[str, Any]:
    text = f"Summary: {state['topic']} is named {state['name']}."
    return {"messages": [AIMessage(content=text)], "result": {"summary": text}}


def linger(state: SummaryState) -> dict[str, Any]:
    time.sleep(float(os.environ.get("LINGER_SECONDS") or 0))
    return {}


def build() -> StateGraph:
    graph = StateGraph(SummaryState)
    for node in (draft, ask, summarize, linger):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "ask")
    graph.add_edge("ask", "summarize")
    graph.add_edge("summarize", "linger")
    graph.add_edge("linger", END)
    return graph


def initial_state(data: SlowInput, message: str) -> dict[str, Any]:
    return {"topic": data.topic}

"""The provider adopter agent's graph (registered in tests/providers/catalog.py): the
same create_agent + HumanInTheLoopMiddleware agent as tests/adopter_agents.py, with the
configured chat model (AGENT_MODEL, our fake provider in these tests) instead of a
scripted one. Imported only by the worker.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.chat_models import init_chat_model

from agents.chat_model import get_chat_model
from tests.adopter_agents import INTERRUPT_ON, delete_file, send_email


def adopter_build() -> Any:
    return create_agent(get_chat_model(), tools=[send_email, delete_file],
                        middleware=[HumanInTheLoopMiddleware(interrupt_on=INTERRUPT_ON)])


def uncut_build() -> Any:
    """The assistant's model turn, on a chat model built as an adopter builds one: the
    SDK's own HTTP client, which a cancel cannot cut (execution.calls), so its late
    answer reaches the graph after the cancel (tests/providers/test_fencing.py)."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, StateGraph

    from agents.assistant import AssistantState

    model = init_chat_model(settings.AGENT_MODEL, timeout=settings.MODEL_TIMEOUT_SECONDS,
                            max_retries=0, stream_usage=True)

    def agent(state: AssistantState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def finish(state: AssistantState) -> dict[str, Any]:
        last = state["messages"][-1]
        answer = str(last.content) if isinstance(last, AIMessage) else ""
        return {"outcome": "completed", "result": {"answer": answer}}

    graph = StateGraph(AssistantState)
    graph.add_node("agent", agent)
    graph.add_node("finish", finish)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "finish")
    graph.add_edge("finish", END)
    return graph

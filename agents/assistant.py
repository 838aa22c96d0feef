"""``assistant``: the first seed's ``reactAgent`` — a tool-calling agent that asks when it must.

Bound to the ``ask_*`` tools (input, choice, multi choice, confirm), ``kb_search`` over the
shipped knowledge base, and ``file_ticket``, whose calls need approval (tool approval:
approve / edit / reject; a rejected call never runs).

agent ⇄ [approve_tools →] tools, until the model answers without calling a tool.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel

from agents import assistant_offline  # noqa: F401 - teaches the offline model this agent
from agents.chat_model import get_chat_model
from agents.knowledge import kb_search, topics
from hitl.ask_tools import ASK_TOOLS, ASK_TOOLS_SYSTEM_PROMPT
from hitl.tool_approval import (
    ToolApproval,
    approval_node,
    needs_approval,
    pending_calls,
    tools_node,
)

MAX_MODEL_TURNS = 8


@tool
def file_ticket(title: str, priority: Literal["low", "normal", "high"],
                config: RunnableConfig) -> str:
    """File a support ticket for a problem the knowledge base does not solve."""
    from workspace.services import ticket_file

    ticket = ticket_file(thread_id=config["configurable"]["thread_id"], title=title,
                         priority=priority)
    return f"Filed ticket #{ticket.pk} ({ticket.priority}): {ticket.title}"


TOOLS = [*ASK_TOOLS, kb_search, file_ticket]
APPROVAL = {"file_ticket": ToolApproval(
    description="files a support ticket that the support team will see",
    allowed=("approve", "edit", "reject"))}


def system_prompt() -> str:
    return ("You are the help-center assistant. Answer from the knowledge base (kb_search) "
            "and say which article you used; file a ticket (file_ticket) only when asked.\n\n"
            + ASK_TOOLS_SYSTEM_PROMPT + "\n\nKnowledge base topics:\n"
            + "".join(f"- {t}\n" for t in topics()))


class AssistantState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: int
    result: dict[str, Any]
    outcome: str


def build() -> StateGraph:
    def agent(state: AssistantState) -> dict[str, Any]:
        model = get_chat_model().bind_tools(TOOLS)
        reply = model.invoke([SystemMessage(system_prompt()), *state["messages"]])
        return {"messages": [reply], "turns": state.get("turns", 0) + 1}

    def finish(state: AssistantState) -> dict[str, Any]:
        last = state["messages"][-1]
        answer = str(last.content) if isinstance(last, AIMessage) else ""
        return {"outcome": "completed", "result": {"answer": answer}}

    def route(state: AssistantState) -> str:
        _, calls = pending_calls(state["messages"])
        if not calls or state.get("turns", 0) >= MAX_MODEL_TURNS:
            return "finish"
        return "approve_tools" if needs_approval(state["messages"], APPROVAL) else "tools"

    graph = StateGraph(AssistantState)
    graph.add_node("agent", agent)
    graph.add_node("approve_tools", approval_node(TOOLS, APPROVAL))
    graph.add_node("tools", tools_node(TOOLS))
    graph.add_node("finish", finish)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["approve_tools", "tools", "finish"])
    graph.add_edge("approve_tools", "tools")
    graph.add_edge("tools", "agent")
    graph.add_edge("finish", END)
    return graph


def initial_state(data: BaseModel, message: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=message or data.question)], "turns": 0}

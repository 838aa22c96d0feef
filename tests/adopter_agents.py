"""Test-only agents written as a LangChain / LangGraph user already has them, with no
agentsite code: each interrupt format of ``hitl.formats`` raised by its own library.

Each graph records what it received: the value an ``interrupt()`` returned goes to the
state's ``result`` (the run's result), and every tool that runs appends its call to a
Redis list per thread (``adopter-tools:<thread id>``), so tests see which tools ran.
Registered in tests/agent_catalog.py; imported only by the worker.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypedDict

import redis
from django.conf import settings
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel

redis_client = redis.Redis(**settings.EVENTSTREAM_REDIS)


def tools_key(thread_id: str) -> str:
    return f"adopter-tools:{thread_id}"


def _ran(name: str, args: dict[str, Any]) -> str:
    thread = get_config()["configurable"]["thread_id"]
    redis_client.rpush(tools_key(thread), json.dumps({"name": name, "args": args}))
    return f"{name} done"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return _ran("send_email", {"to": to, "body": body})


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return _ran("delete_file", {"path": path})


class ScriptedChatModel(BaseChatModel):
    """A chat model with a script instead of a network: the first turn asks for
    send_email and delete_file (in that order); once tool results are in, it ends with
    a text naming them. Stateless across runs (the conversation is the state)."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        last_human = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        results = [m for m in messages[last_human:] if isinstance(m, ToolMessage)]
        if results:
            reply = AIMessage(content="finished: " + " | ".join(str(m.content) for m in results))
        else:
            reply = AIMessage(content="", tool_calls=[
                {"name": "send_email", "args": {"to": "alice@example.com", "body": "hi"},
                 "id": "call_email", "type": "tool_call"},
                {"name": "delete_file", "args": {"path": "/tmp/report"},
                 "id": "call_delete", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


INTERRUPT_ON: dict[str, Any] = {
    "send_email": True,  # approve / edit / reject / respond
    "delete_file": {"allowed_decisions": ["approve", "reject"],
                    "description": "Deleting a file cannot be undone"},
}

# ``builder`` forms: a compiled graph (create_agent's, registered as it is) ...
hitl_batched_graph = create_agent(
    ScriptedChatModel(), tools=[send_email, delete_file],
    middleware=[HumanInTheLoopMiddleware(interrupt_on=INTERRUPT_ON)])


# ... and a function returning one.
def hitl_per_call_build() -> Any:
    return create_agent(
        ScriptedChatModel(), tools=[send_email, delete_file],
        middleware=[HumanInTheLoopMiddleware(interrupt_on=INTERRUPT_ON,
                                             interrupt_mode="per_call")])


def hitl_approve_only_build() -> Any:
    """delete_file may only be approved (no reject, no respond): a cancel has no decline
    the middleware accepts. send_email runs unasked."""
    return create_agent(
        ScriptedChatModel(), tools=[send_email, delete_file],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={
            "delete_file": {"allowed_decisions": ["approve"]}})])


def messages_state(input: Any, message: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=message or "email alice, delete the report")]}


# --- plain StateGraphs (a function returning the uncompiled graph) ---------------------------

class Received(TypedDict, total=False):
    result: Any


def _one_question(ask: Any) -> StateGraph:
    graph = StateGraph(Received)

    def node(state: Received) -> Received:
        return {"result": {"received": ask()}}

    graph.add_node("ask", node)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph


def subgraph_build() -> StateGraph:
    """A compiled graph as a node of its parent (its parts carry the node's namespace
    when streamed with subgraphs), then one question in the parent."""
    child = StateGraph(Received)
    child.add_node("inner", lambda state: {"result": {"inner": "ran"}})
    child.add_edge(START, "inner")
    child.add_edge("inner", END)
    parent = StateGraph(Received)
    parent.add_node("child", child.compile())
    parent.add_node("ask", lambda state: {"result": {
        **state["result"], "received": interrupt("The child ran: go on?")}})
    parent.add_edge(START, "child")
    parent.add_edge("child", "ask")
    parent.add_edge("ask", END)
    return parent


def plain_string_build() -> StateGraph:
    return _one_question(lambda: interrupt("Which mission flies next?"))


def question_options_build() -> StateGraph:
    return _one_question(lambda: interrupt(
        {"question": "Pick a colour", "options": ["red", "green", "blue"]}))


class Trip(BaseModel):
    destination: str
    nights: int
    smoking: bool = False


def _typed() -> Any:
    trip = interrupt({"question": "Where to?"}, response_schema=Trip)
    # LangGraph validated the answer into the model: record its type and data.
    return {"type": type(trip).__name__, "data": trip.model_dump()}


def typed_answer_build() -> StateGraph:
    return _one_question(_typed)


def hitl_request_by_hand_build() -> StateGraph:
    """A HITLRequest raised by hand from a node (no ToolNode in the graph): nobody knows
    the arguments' schema, so the card keeps a JSON editor for an edit."""
    request = {"action_requests": [
        {"name": "send_email", "args": {"to": "alice@example.com", "body": "hi"},
         "description": "Send the email?"},
        {"name": "delete_file", "args": {"path": "/tmp/report"}}],
        "review_configs": [
            {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]},
            {"action_name": "delete_file", "allowed_decisions": ["approve", "edit", "reject"]}]}
    return _one_question(lambda: interrupt(request))


def inbox_build() -> StateGraph:
    request = {"action_request": {"action": "publish_post", "args": {"title": "Hello"}},
               "config": {"allow_ignore": True, "allow_respond": True, "allow_edit": True,
                          "allow_accept": True},
               "description": "Publish the post?"}
    return _one_question(lambda: interrupt([request])[0])


ODD_VALUES: dict[str, Any] = {
    "nested": [[1, [2, [3, {"a": [None]}]]]],
    "none": None,
    "number": 42.5,
    "huge": "x" * 200_000,
    "unknown_type": {"type": "poll", "choices": [1, 2]},
    "ours_malformed": {"type": "select", "message": "no options"},
}


# Keys in no sorted order, nested: stored and served in the order raised.
ORDERED = {"zeta": 1, "a": {"yy": [{"q": 1, "b": 2}], "c": None, "bbb": True},
           "mm": "last but one", "b": [3, 2, 1]}
RAISED: dict[str, Any] = {**ODD_VALUES, "ordered": ORDERED}


def odd_values_build() -> StateGraph:
    """Raises the odd value the run's input names (``which``, a key of ``RAISED``)."""
    graph = StateGraph(OddState)

    def node(state: OddState) -> OddState:
        return {"result": {"received": interrupt(RAISED[state["which"]])}}

    graph.add_node("ask", node)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph


class OddState(TypedDict, total=False):
    which: str
    result: Any


def empty_state(input: Any, message: str) -> dict[str, Any]:
    return {}


def odd_state(input: Any, message: str) -> dict[str, Any]:
    return {"which": input.which}


not_a_graph = {"this": "is not a graph"}

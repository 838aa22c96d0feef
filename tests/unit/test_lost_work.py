"""What a taken-over segment reads back from the checkpoints its lost worker wrote
(``execution.recovery.lost_work``): the text of the AI messages that segment added,
not those of earlier segments or of its input. On LangGraph's in-memory checkpointer."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from execution.recovery import SEGMENT_KEY, lost_work, segment_tag


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: list[AnyMessage]
    name: str


def draft(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage("Draft. ")], "notes": [AIMessage("a note")]}


def ask(state: State) -> dict[str, Any]:
    return {"name": interrupt("name?")}


def summarize(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage("Summary: "), AIMessage(
        content=[{"type": "text", "text": f"named {state['name']}."}])]}


def _graph() -> Any:
    graph = StateGraph(State)
    for node in (draft, ask, summarize):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "ask")
    graph.add_edge("ask", "summarize")
    graph.add_edge("summarize", END)
    return graph.compile(checkpointer=InMemorySaver())


def _segment(graph: Any, value: Any, run: str, number: int) -> None:
    config = {"configurable": {"thread_id": "t"},
              "metadata": {SEGMENT_KEY: segment_tag(run, number)}}
    for _ in graph.stream(value, config, durability="sync"):
        pass


def test_each_segment_reads_back_only_its_own_text():
    graph = _graph()
    start = {"messages": [HumanMessage("hi"), AIMessage("history from the client")]}
    _segment(graph, start, "r1", 1)  # draft, then pauses in ask
    _segment(graph, Command(resume="Ada"), "r1", 2)  # summarize, ends
    saver = graph.checkpointer
    first = lost_work(saver, thread_id="t", tag=segment_tag("r1", 1))
    assert first.text == "Draft. a note"  # not the input's AI message
    assert lost_work(saver, thread_id="t", tag=segment_tag("r1", 1),
                     everywhere=False).text == "Draft. "  # the messages channel only
    assert lost_work(saver, thread_id="t",
                     tag=segment_tag("r1", 2)).text == "Summary: named Ada."
    # A later run on the thread: only its own (its note has no id and equals the last
    # run's, so only the messages channel tells them apart).
    _segment(graph, {"messages": [HumanMessage("again")]}, "r2", 1)
    assert lost_work(saver, thread_id="t", tag=segment_tag("r2", 1),
                     everywhere=False).text == "Draft. "
    # A segment that stored nothing.
    assert lost_work(saver, thread_id="t", tag=segment_tag("r3", 1)).text == ""

"""A segment's end read from the graph's stream (executor._End) is what get_state says."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from execution.checkpointer import close_checkpointer, get_checkpointer
from execution.executor import _End

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True, scope="module")
def _pool_closed_after():
    yield
    close_checkpointer()  # its pooled connections would keep the test database open


class State(TypedDict, total=False):
    done: Annotated[list[str], operator.add]
    answers: Annotated[list[str], operator.add]


def _graph() -> Any:
    """``quick`` finishes in the step where ``ask_a`` and ``ask_b`` ask; ``after`` runs
    once both are answered."""
    graph = StateGraph(State)
    graph.add_node("quick", lambda s: {"done": ["quick"]})
    graph.add_node("ask_a", lambda s: {"answers": [interrupt({"q": "a"})]})
    graph.add_node("ask_b", lambda s: {"answers": [interrupt({"q": "b"})]})
    graph.add_node("after", lambda s: {"done": ["after"]})
    for node in ("quick", "ask_a", "ask_b"):
        graph.add_edge(START, node)
    graph.add_edge(["quick", "ask_a", "ask_b"], "after")
    graph.add_edge("after", END)
    return graph.compile(checkpointer=get_checkpointer())


def _segment(graph: Any, config: dict, graph_input: Any) -> tuple[dict, list, Any]:
    end = _End()
    for mode, part in graph.stream(graph_input, config, stream_mode=["tasks", "values"]):
        if mode == "values":
            end.on_values(part)
    values, raised = end.result(graph, config)
    return values, raised, graph.get_state(config)


def _ids(interrupts: Any) -> list[tuple[str, Any]]:
    return sorted((i.id, repr(i.value)) for i in interrupts)


def test_the_streams_end_is_the_checkpoints_through_pauses_and_the_finish():
    graph = _graph()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}

    values, raised, snapshot = _segment(graph, config, {"done": []})
    # ``quick`` finished in the asking step: the checkpoint shows its write, and so does
    # the stream's last part (after the parts that carry the questions).
    assert values == snapshot.values == {"done": ["quick"], "answers": []}
    assert _ids(raised) == _ids(i for t in snapshot.tasks for i in t.interrupts)
    assert sorted(i.value["q"] for i in raised) == ["a", "b"]

    # One answer: the other question is raised again, with the same id.
    first = next(i for i in raised if i.value["q"] == "a")
    values, again, snapshot = _segment(graph, config, Command(resume={first.id: "yes"}))
    assert values == snapshot.values == {"done": ["quick"], "answers": ["yes"]}
    assert [(i.id, i.value) for i in again] == [
        (i.id, i.value) for i in raised if i.value["q"] == "b"]
    assert _ids(again) == _ids(i for t in snapshot.tasks for i in t.interrupts)

    values, done, snapshot = _segment(graph, config, Command(resume={again[0].id: "no"}))
    assert done == [] and not snapshot.tasks
    assert values == snapshot.values
    assert sorted(values["done"]) == ["after", "quick"]
    assert sorted(values["answers"]) == ["no", "yes"]


def test_without_values_in_the_stream_the_checkpoint_answers():
    graph = _graph()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    for _ in graph.stream({"done": []}, config, stream_mode=["tasks"]):
        pass
    values, raised = _End().result(graph, config)
    snapshot = graph.get_state(config)
    assert values == snapshot.values
    assert _ids(raised) == _ids(i for t in snapshot.tasks for i in t.interrupts)
    assert len(raised) == 2

"""A segment's checkpoint writes are fenced by its lease (execution/fencing.py)."""

from __future__ import annotations

import uuid
from typing import TypedDict

import pytest
from django.contrib.auth import get_user_model
from langgraph.graph import END, START, StateGraph

from execution.checkpointer import close_checkpointer, get_checkpointer
from execution.fencing import FencedCheckpointer, SegmentLost, segment_config
from runs.models import AgentRun, Conversation


class State(TypedDict):
    n: int


def _graph():
    graph = StateGraph(State)
    graph.add_node("a", lambda s: {"n": s["n"] + 1})
    graph.add_node("b", lambda s: {"n": s["n"] + 1})
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", END)
    return graph.compile(checkpointer=FencedCheckpointer(get_checkpointer()))


@pytest.fixture
def run(transactional_db):
    owner = get_user_model().objects.create_user("fence-owner")
    conversation = Conversation.objects.create(owner=owner, agent="dev")
    yield AgentRun.objects.create(owner=owner, conversation=conversation, agent="dev",
                                  agent_version="1", thread_id=str(conversation.id),
                                  status="running", lease_owner="worker/lease-1")
    close_checkpointer()  # its pooled connections would keep the test database open


def _config(run: AgentRun, lease: str) -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4()),
                             **segment_config(run_id=str(run.id), lease=lease)}}


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_the_holder_writes(run, durability):
    graph, config = _graph(), _config(run, "worker/lease-1")
    assert graph.invoke({"n": 0}, config, durability=durability) == {"n": 2}
    assert graph.get_state(config).values == {"n": 2}


@pytest.mark.parametrize("change", [{"lease_owner": "worker/lease-2"},
                                    {"status": "cancelled", "lease_owner": ""},
                                    {"status": "retrying", "lease_owner": ""}])
@pytest.mark.parametrize("durability", ["sync", "async"])
def test_a_superseded_segment_writes_nothing(run, change, durability):
    graph, config = _graph(), _config(run, "worker/lease-1")
    AgentRun.objects.filter(pk=run.pk).update(**change)
    with pytest.raises(SegmentLost):
        graph.invoke({"n": 0}, config, durability=durability)
    assert get_checkpointer().get_tuple(config) is None  # not even the input


def test_writes_without_a_segment_are_not_fenced(run):
    graph = _graph()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    assert graph.invoke({"n": 0}, config) == {"n": 2}

"""Registration takes what adopters have: an uncompiled StateGraph factory, a compiled
graph (create_agent's, compiled again on our checkpointer) or a factory returning one;
anything else is refused at worker start (``execution.graphs.check_all``), naming the
agent. Also builds every registered entry's graph, as the worker does when it starts."""

from __future__ import annotations

import dataclasses

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

import tests.agent_catalog  # noqa: F401 - registers the test agents
from execution import graphs
from runs import registry


def test_every_registered_builder_gives_a_graph():
    names = [a.name for a in registry.all_agents()]
    assert {"dev", "adopter_batched", "adopter_per_call", "adopter_string"} <= set(names)
    graphs.check_all()


@pytest.mark.parametrize("name", ["adopter_batched", "adopter_per_call", "adopter_string"])
def test_each_form_compiles_on_our_checkpointer(name):
    saver = InMemorySaver()
    graph = graphs.compile_graph(registry.get(name), saver)
    assert isinstance(graph, CompiledStateGraph) and graph.checkpointer is saver


def test_anything_else_is_refused_naming_the_agent():
    agent = dataclasses.replace(registry.get("adopter_string"), name="broken",
                                builder="tests.adopter_agents.not_a_graph")
    with pytest.raises(graphs.AgentGraphError, match="agent 'broken'.*gave dict"):
        graphs.built(agent)
    missing = dataclasses.replace(agent, builder="tests.adopter_agents.nope")
    with pytest.raises(graphs.AgentGraphError, match="agent 'broken'.*failed"):
        graphs.built(missing)

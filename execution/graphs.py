"""The agents' graphs, compiled once per worker process with its Postgres checkpointer.

Graph code: only the Celery worker imports this (web processes know agents by their
registry entries, ``runs.registry``)."""

from __future__ import annotations

import threading
from typing import Any

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from execution.checkpointer import get_checkpointer
from execution.fencing import FencedCheckpointer
from runs import registry

# name → (the registered agent and the checkpointer it was compiled with, the graph)
_compiled: dict[str, tuple[Any, Any, Any]] = {}
_lock = threading.Lock()


def compiled(name: str) -> Any:
    """The agent's graph compiled with this process's checkpointer, its segments' writes
    fenced (``execution.fencing``)."""
    agent = registry.get(name)
    if agent is None:
        raise KeyError(f"unknown agent {name!r}")
    saver = get_checkpointer()
    found = _compiled.get(name)
    # Compiled again when the agent was registered again, or the checkpointer was closed
    # and made anew (``close_checkpointer``): a graph on a closed pool fails every step.
    if found is None or found[0] is not agent or found[1] is not saver:
        with _lock:
            found = _compiled.get(name)
            if found is None or found[0] is not agent or found[1] is not saver:
                found = _compiled[name] = (agent, saver, compile_graph(
                    agent, FencedCheckpointer(saver)))
    return found[2]


class AgentGraphError(TypeError):
    """An agent whose ``builder`` does not give a graph we can run (names the agent)."""


def built(agent: Any) -> Any:
    """The agent's graph as its builder gives it: a StateGraph or a compiled graph;
    anything else (or a builder that fails) raises AgentGraphError naming the agent."""
    try:
        made = agent.build()
    except Exception as err:  # noqa: BLE001 - say which agent, keep the cause
        raise AgentGraphError(f"agent {agent.name!r}: builder {agent.builder!r} failed: "
                              f"{type(err).__name__}: {err}") from err
    if isinstance(made, (StateGraph, CompiledStateGraph)):
        return made
    raise AgentGraphError(
        f"agent {agent.name!r}: builder {agent.builder!r} gave {type(made).__name__}; "
        "expected a langgraph StateGraph, a compiled graph (as create_agent returns) or a "
        "function returning one of them")


def compile_graph(agent: Any, checkpointer: Any) -> Any:
    """The agent's graph compiled on ``checkpointer``. A compiled graph (e.g. from
    ``create_agent``) is compiled again from its own builder, keeping what it was
    compiled with (store, interrupt_before / _after, name, debug) but our checkpointer."""
    made = built(agent)
    if isinstance(made, StateGraph):
        return made.compile(checkpointer=checkpointer)
    return made.builder.compile(
        checkpointer=checkpointer, store=made.store, cache=made.cache,
        interrupt_before=made.interrupt_before_nodes or None,
        interrupt_after=made.interrupt_after_nodes or None, debug=made.debug, name=made.name)


def check_all() -> None:
    """Build every registered agent's graph (no compile): a wrong builder is refused
    when the worker starts, naming the agent, not at the agent's first run."""
    for agent in registry.all_agents():
        built(agent)


def reset_compiled() -> None:
    """Forget compiled graphs (after a fork: their checkpointer pool belongs to the parent)."""
    _compiled.clear()

"""The agents' graphs, compiled once per worker process with its Postgres checkpointer.

Graph code: only the Celery worker imports this (web processes know agents by their
registry entries, ``runs.registry``)."""

from __future__ import annotations

import threading
from typing import Any

from execution.checkpointer import get_checkpointer
from runs import registry

# name → (the registered agent it was compiled from, the compiled graph)
_compiled: dict[str, tuple[Any, Any]] = {}
_lock = threading.Lock()


def compiled(name: str) -> Any:
    """The agent's graph compiled with this process's checkpointer."""
    agent = registry.get(name)
    if agent is None:
        raise KeyError(f"unknown agent {name!r}")
    found = _compiled.get(name)
    if found is None or found[0] is not agent:  # not yet, or the agent was registered again
        with _lock:
            found = _compiled.get(name)
            if found is None or found[0] is not agent:
                found = _compiled[name] = (
                    agent, agent.build().compile(checkpointer=get_checkpointer()))
    return found[1]


def reset_compiled() -> None:
    """Forget compiled graphs (after a fork: their checkpointer pool belongs to the parent)."""
    _compiled.clear()

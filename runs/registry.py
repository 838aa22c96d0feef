"""Agent registry: every agent has a name, a version, a description and an input schema.

Agents are registered (``register(Agent(...))``) from the modules listed in
settings.AGENTSITE_AGENT_MODULES, which every process imports, web processes included.
An entry is metadata only: its graph is named by a dotted path (``builder``, with
``initial_state``), imported only by the Celery worker, which compiles it with its
checkpointer (``execution.graphs``). So a module listing agents imports no LangGraph,
LangChain model or ``hitl.ask`` code: keep each agent's graph in a module of its own
(``agents/catalog.py`` lists the shipped agents, ``agents/dev.py`` is one graph).
A run records the version it started with; a resume under a different version is
refused unless the agent lists the old version in ``compatible_versions``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string
from pydantic import BaseModel


@dataclass(frozen=True)
class Policy:
    """Defaults for an agent's interrupts (``hitl.policies``); a value the graph passes to
    a ``hitl_*`` helper wins over these. Times in seconds; None = no deadline."""

    assignees: tuple[str, ...] = ()  # usernames
    groups: tuple[str, ...] = ()  # group names
    requester_may_decide: bool = True
    required_approvals: int = 1
    reject_policy: str = "any"  # "any" rejection rejects, or "quorum" of rejections
    timeout: float | None = None
    escalate_after: float | None = None
    escalate_to: tuple[str, ...] = ()  # group names


@dataclass(frozen=True)
class Agent:
    name: str
    version: str
    description: str
    input_model: type[BaseModel]
    # Dotted path of the graph: a function returning an uncompiled StateGraph
    # ("agents.dev.build"), a compiled graph (what ``create_agent`` returns, e.g.
    # "myapp.agent.graph"), or a function returning one; imported, checked and compiled
    # with our checkpointer only in the worker (``execution.graphs``, at worker start).
    builder: str
    # Dotted path of a function building the graph's first state from the validated
    # input and the user's message, ``f(input, message) -> dict``; called by the worker.
    initial_state: str
    compatible_versions: frozenset[str] = field(default_factory=frozenset)
    # Who may decide its interrupts and by when (defaults: anyone allowed, no deadline).
    policy: Policy = field(default_factory=Policy)
    # Its nodes call a chat model whose tokens are streamed as they come (LangGraph's
    # ``messages`` stream mode, a callback on every node). False for an agent whose
    # messages are whole node outputs under ``messages``: they are read from the nodes'
    # updates instead, and its steps run without that callback (a model it calls anyway
    # shows its message whole, when the node ends).
    model_tokens: bool = True

    def __post_init__(self) -> None:
        for field_name in ("builder", "initial_state"):
            _require_dotted_path(self.name, field_name, getattr(self, field_name))

    def accepts_version(self, version: str) -> bool:
        return version == self.version or version in self.compatible_versions

    def input_schema(self) -> dict[str, Any]:
        return self.input_model.model_json_schema()

    def build(self) -> Any:
        """What ``builder`` names: the object itself, or what the function returns
        (imports the graph's module: worker only; ``execution.graphs`` checks it)."""
        target = import_string(self.builder)
        if inspect.isroutine(target) or isinstance(target, functools.partial):
            return target()
        return target

    def start_state(self, data: BaseModel, message: str) -> dict[str, Any]:
        """The graph's first state (imports the graph's module: worker only)."""
        make: Callable[[BaseModel, str], dict[str, Any]] = import_string(self.initial_state)
        return make(data, message)


class AgentPathError(ImproperlyConfigured):
    """An entry names its graph or first state by something other than a dotted path."""


def _require_dotted_path(agent: str, field_name: str, value: object) -> None:
    """Refuse, naming the agent, a ``builder`` / ``initial_state`` that is not a dotted
    path string: every process (web ones too) imports the agent catalog, but only the
    worker may import graph code, by this path, so the catalog cannot hold the object."""
    if isinstance(value, str) and "." in value.strip(".") and value.strip() == value:
        return
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    named = isinstance(module, str) and isinstance(qualname, str)
    given = (f"the {type(value).__name__} {qualname}" if named
             else repr(value) if isinstance(value, str) else f"a {type(value).__name__}")
    path = f"{module}.{qualname}" if named else "myagents.graphs.build"
    raise AgentPathError(
        f"agent {agent!r}: {field_name} must be a dotted path string such as {path!r}, "
        f"not {given}. Web processes load the agent catalog but never import graph code; "
        f"only the worker imports {field_name} by its path.")


_agents: dict[str, Agent] = {}
_lock = threading.Lock()
_loaded = False


def register(agent: Agent) -> Agent:
    _agents[agent.name] = agent
    return agent


def _load() -> None:
    global _loaded
    if not _loaded:
        with _lock:
            if not _loaded:
                for module in settings.AGENTSITE_AGENT_MODULES:
                    importlib.import_module(module)
                _loaded = True


def all_agents() -> list[Agent]:
    _load()
    return sorted(_agents.values(), key=lambda a: a.name)


def get(name: str) -> Agent | None:
    _load()
    return _agents.get(name)


OFFLINE_MODEL = "offline"


def model_name() -> str:
    """What serves the agents' chat model: the AGENT_MODEL string, or ``offline``."""
    return (getattr(settings, "AGENT_MODEL", "") or "").strip() or OFFLINE_MODEL

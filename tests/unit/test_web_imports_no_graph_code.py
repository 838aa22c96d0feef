"""Web processes import no graph code: graphs are built, compiled and run only by the
Celery worker (execution.graphs / execution.executor). A web process knows agents by
their registry entries (agents/catalog.py: metadata, graphs named by dotted path) and
reads a thread's state through the checkpointer, never through a compiled graph."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]

# What a web process must not have loaded, and why each name stands for graph code:
FORBIDDEN = [
    # LangGraph's graph runtime and graph builders (StateGraph, Pregel). The web does
    # load ``langgraph.checkpoint`` (PostgresSaver, to read a thread's state on AG-UI
    # connect) and the ``langgraph`` / ``langgraph.store`` packages it pulls in: the
    # checkpoint library, not a graph.
    "langgraph.pregel",
    "langgraph.graph",
    "langgraph.prebuilt",
    # LangChain agents and chat models. ``langchain_core.language_models`` (the package
    # and its ``_utils``) comes with ``langchain_core.messages``, which the checkpoint
    # serializer needs to read the messages in a state; the model classes live in these
    # submodules, which nothing in the web needs.
    "langchain.agents",
    "langchain.chat_models",
    "langchain_core.language_models.base",
    "langchain_core.language_models.chat_models",
    "langchain_core.language_models.llms",
    # Our executor and the compiled graphs (the worker's side).
    "execution.executor",
    "execution.graphs",
    "execution.tasks",
    # The graph-side HITL helpers: they call LangGraph's interrupt() inside a node.
    "hitl.ask",
    "hitl.ask_tools",
    "hitl.tool_approval",
    # The agents' graph modules (their registry entries are agents.catalog and
    # tests.agent_catalog, which the web does load), and the model behind them.
    "agents.dev",
    "agents.showcase",
    "agents.approvals",
    "agents.tasklist",
    "agents.tasklist_plan",
    "agents.assistant",
    "agents.assistant_offline",
    "agents.stock",
    "agents.knowledge",
    "agents.chat_model",
    "tests.counting_agents",
    "tests.faulty_agents",
    "tests.slow_agents",
    "tests.policy_agents",
]

# The ASGI application (what uvicorn loads), every URL's view module, and the agents as
# the first request loads them (the registry loads its modules lazily).
_WEB = """
import importlib, json, sys
import agentsite.asgi
importlib.import_module("agentsite.urls")
from django.urls import get_resolver
get_resolver().url_patterns
from runs import registry
names = [agent.name for agent in registry.all_agents()]
print(json.dumps({"agents": names, "modules": sorted(sys.modules)}))
"""


def _web_modules() -> dict:
    # The test environment's agents, as the session's web process gets them (conftest).
    env = {**os.environ, "AGENTSITE_AGENT_MODULES": ",".join(
        [*settings.AGENTSITE_AGENT_MODULES, "tests.agent_catalog"])}
    done = subprocess.run([sys.executable, "-c", _WEB], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_web_process_imports_no_graph_code():
    loaded = _web_modules()
    # The agents are all known to the web process, by their entries only.
    assert {"dev", "tasklist", "assistant", "faulty", "policy_ask"} <= set(loaded["agents"])
    modules = set(loaded["modules"])
    assert "agents.catalog" in modules and "agentsite.urls" in modules
    found = sorted(m for m in modules
                   if any(m == name or m.startswith(name + ".") for name in FORBIDDEN))
    assert not found, f"graph code imported by the web process: {found}"


def test_the_worker_builds_a_graph_from_its_entry():
    """What the web knows by name, the worker builds: the entry's dotted paths resolve to
    a graph that compiles, and to its first state."""
    from runs import registry

    agent = registry.get("dev")
    graph = agent.build().compile()
    state = agent.start_state(agent.input_model(topic="x"), "hi")
    assert "ask_name" in graph.nodes and state["topic"] == "x"

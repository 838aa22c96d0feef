"""Test-only agents: the shipped tasklist and assistant graphs, unchanged, compiled with a
callback handler that logs every node start / end / interrupt, chat model call and tool
call to a Redis list per thread (``calls:<thread_id>``).

Registered in tests/agent_catalog.py and built by the real worker process, so the count
is taken there, across pause and resume.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import redis
from django.conf import settings
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphInterrupt
from langgraph.graph import StateGraph

from agents import assistant, tasklist

_redis = redis.Redis(**settings.EVENTSTREAM_REDIS)


def log_key(thread_id: str) -> str:
    return f"calls:{thread_id}"


class CallLog(BaseCallbackHandler):
    """Appends {event, node, name} to the thread's list; node events only for graph nodes
    (runs whose parent is the graph's root run and whose name is the node's name)."""

    def __init__(self) -> None:
        self.roots: set[UUID] = set()
        self.nodes: dict[UUID, tuple[str, dict]] = {}  # run id → (node name, metadata)

    def _push(self, metadata: dict[str, Any] | None, event: str, name: str) -> None:
        metadata = metadata or {}
        thread = metadata.get("thread_id")
        if thread:
            _redis.rpush(log_key(thread), json.dumps(
                {"event": event, "node": metadata.get("langgraph_node", ""), "name": name}))

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, metadata: dict | None = None,
                       name: str | None = None, **kwargs: Any) -> None:
        if parent_run_id is None:
            self.roots.add(run_id)
        elif parent_run_id in self.roots and (metadata or {}).get("langgraph_node") == name:
            self.nodes[run_id] = (name, metadata or {})
            self._push(metadata, "node_start", name)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.roots.discard(run_id)
        if run_id in self.nodes:
            name, metadata = self.nodes.pop(run_id)
            self._push(metadata, "node_end", name)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.roots.discard(run_id)
        if run_id in self.nodes:
            name, metadata = self.nodes.pop(run_id)
            interrupted = isinstance(error, GraphInterrupt)
            self._push(metadata, "node_interrupt" if interrupted else "node_error", name)

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID,
                            metadata: dict | None = None, **kwargs: Any) -> None:
        self._push(metadata, "model", "chat_model")

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID,
                      metadata: dict | None = None, **kwargs: Any) -> None:
        self._push(metadata, "tool", kwargs.get("name") or (serialized or {}).get("name", ""))


class CountedGraph(StateGraph):
    def compile(self, *args: Any, **kwargs: Any) -> Any:
        return super().compile(*args, **kwargs).with_config(callbacks=[CallLog()])


def counted(build):
    def builder() -> StateGraph:
        graph = build()
        graph.__class__ = CountedGraph
        return graph

    return builder


tasklist_build = counted(tasklist.build)
assistant_build = counted(assistant.build)

"""The argument schemas of a graph's tools, stored with the questions that name tools
without describing their arguments (a batched ``HITLRequest``: its format's ``tools()``).

Only the worker has the tools (graph code); the web processes check an edit against what
is stored here (``AgentInterrupt.args_schemas``), so a bad edit is a 400 at the door
instead of a tool that fails after the answer was consumed.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel

from hitl.formats import recognise

log = logging.getLogger(__name__)
_found: weakref.WeakKeyDictionary[Any, dict[str, dict[str, Any]]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def args_schema(tool: BaseTool) -> dict[str, Any] | None:
    """JSON Schema of what the model (and a reviewer's edit) passes to ``tool``: its
    ``tool_call_schema``, closed to undeclared arguments unless its model allows extras
    (the tool would drop them silently: a reviewer's typo must not vanish)."""
    schema = tool.tool_call_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        out = dict(schema.model_json_schema())
        if schema.model_config.get("extra") != "allow":
            out.setdefault("additionalProperties", False)
        return out
    return dict(schema) if isinstance(schema, dict) else None


def graph_tools(graph: Any) -> dict[str, dict[str, Any]]:
    """Tool name → argument schema, for every ``ToolNode`` of the compiled graph and of
    its subgraphs (once per compiled graph)."""
    found = _found.get(graph)
    if found is not None:
        return found
    schemas: dict[str, dict[str, Any]] = {}
    graphs = [graph, *(sub for _, sub in graph.get_subgraphs(recurse=True))]
    for each in graphs:
        for node in each.nodes.values():
            if isinstance(node.bound, ToolNode):
                for name, tool in node.bound.tools_by_name.items():
                    try:
                        schema = args_schema(tool)
                    except Exception:  # noqa: BLE001 - e.g. a type JSON Schema cannot say
                        log.warning("tool %s: no JSON Schema of its arguments", name)
                        continue
                    if schema is not None:
                        schemas.setdefault(name, schema)
    with _lock:
        _found[graph] = schemas
    return schemas


def for_question(graph: Any, value: Any, response_schema: Any) -> dict[str, Any] | None:
    """The schemas to store with one raised question: those of the tools its format
    names (``tools()``) that the graph has; None when there are none."""
    names = recognise(value, response_schema if isinstance(response_schema, dict) else None
                      ).tools()
    if not names:
        return None
    try:
        known = graph_tools(graph)
    except Exception:  # noqa: BLE001 - a graph we cannot read pauses all the same (no forms)
        log.exception("tool argument schemas not read; edits will not be checked")
        return None
    found = {name: known[name] for name in names if name in known}
    return found or None

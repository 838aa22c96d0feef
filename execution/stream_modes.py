"""LangGraph stream modes a run's starting client asked for (``AgentRun.stream_modes``),
published by the worker on the run's channel beside the AG-UI events.

Each part the graph streams in one of those modes becomes an AG-UI ``RAW`` event
(``source="langgraph"``, ``event={"mode", "ns", "data"}``: the protocol's event for
passing an underlying system's events through), so one channel, one id sequence and
one fence hold everything a run produced, and a door that speaks LangGraph's protocol
(``lgapi``) serves these modes from the log, resumable by event id. Nothing is rebuilt
from the AG-UI events.

``lg_json`` is how values become JSON here and when a door reads a thread's state from
the checkpointer: LangChain messages and other pydantic models as ``model_dump()``,
interrupts as ``{"value", "id"}`` (as LangGraph's server writes them). No LangGraph
runtime is imported: web processes import this module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ag_ui.core import RawEvent
from pydantic import BaseModel

SOURCE = "langgraph"
# Not a mode: kept among a run's modes when its client asked for ``stream_subgraphs``.
# The graph is then streamed with ``subgraphs=True``, and each part carries its
# subgraph namespace (``ns``: LangGraph's, e.g. ``["child:<task id>"]``).
SUBGRAPHS = "subgraphs"
# The client's mode → the graph's stream mode that produces it.
GRAPH_MODES = {
    "values": "values",
    "updates": "updates",
    "messages-tuple": "messages",
    "messages": "messages",
    "custom": "custom",
    "debug": "debug",
    "tasks": "tasks",
    "checkpoints": "checkpoints",
}


def lg_json(value: Any) -> Any:
    """``value`` as JSON, the way LangGraph's server serialises state and stream parts."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): lg_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [lg_json(v) for v in value]
    if isinstance(value, BaseModel):
        return lg_json(value.model_dump())
    if type(value).__name__ == "Interrupt" and hasattr(value, "id") and hasattr(value, "value"):
        out = {"value": lg_json(value.value), "id": value.id}
        if getattr(value, "response_schema", None) is not None:
            out["response_schema"] = lg_json(value.response_schema)
        return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: lg_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "_asdict"):  # named tuples (Send, PregelTask, …)
        return lg_json(value._asdict())
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return repr(value)


class StreamModes:
    """The graph stream modes a run needs for its client's modes, and each part as the
    RAW event the worker publishes."""

    def __init__(self, requested: Iterable[str]) -> None:
        requested = list(requested)
        self.graph = {GRAPH_MODES[m] for m in requested if m in GRAPH_MODES}
        self.subgraphs = SUBGRAPHS in requested and bool(self.graph)

    def graph_modes(self) -> list[str]:
        return sorted(self.graph)

    def events(self, mode: str, part: Any, ns: tuple[str, ...] = ()) -> list[RawEvent]:
        if mode not in self.graph:
            return []
        data = lg_json(list(part) if mode == "messages" else part)
        return [RawEvent(event={"mode": mode, "ns": list(ns), "data": data}, source=SOURCE)]

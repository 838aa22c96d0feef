"""A thread's state and history in the Platform's ``ThreadState`` shape, read from the
checkpointer (``PostgresSaver.get_tuple`` / ``list``), never from a compiled graph: web
processes run no graph code.

Without the graph, three things are read from the checkpoint itself: ``values`` are its
channel values minus LangGraph's own channels (``execution.checkpointer.thread_values``'s
rule); ``next`` names the nodes its ``branch:to:<node>`` triggers point at; and
``tasks`` / ``interrupts`` come from its pending ``__interrupt__`` writes, one task per
asking task id (named after the next node when there is exactly one).
"""

from __future__ import annotations

from typing import Any

from execution.checkpointer import get_checkpointer
from execution.stream_modes import lg_json

INTERRUPT = "__interrupt__"
TRIGGER = "branch:to:"


def _config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _checkpoint(config: dict[str, Any] | None) -> dict[str, Any] | None:
    if not config:
        return None
    c = config.get("configurable", {})
    return {"thread_id": c.get("thread_id"), "checkpoint_ns": c.get("checkpoint_ns", ""),
            "checkpoint_id": c.get("checkpoint_id"), "checkpoint_map": None}


def values_of(saved: Any) -> dict[str, Any]:
    channels = saved.checkpoint.get("channel_values", {}) if saved else {}
    return lg_json({k: v for k, v in channels.items()
                    if not k.startswith("__") and ":" not in k})


def interrupts_of(saved: Any) -> dict[str, list[dict[str, Any]]]:
    """Pending interrupts by the id of the task that raised them."""
    found: dict[str, list[dict[str, Any]]] = {}
    for task_id, channel, value in (saved.pending_writes or []) if saved else []:
        if channel == INTERRUPT:
            items = value if isinstance(value, (list, tuple)) else [value]
            found.setdefault(task_id, []).extend(lg_json(list(items)))
    return found


def state_of(saved: Any, thread_id: str) -> dict[str, Any]:
    """``ThreadState`` of one checkpoint (an empty one when the thread has none)."""
    if saved is None:
        return {"values": {}, "next": [], "tasks": [], "interrupts": [], "metadata": {},
                "checkpoint": {"thread_id": thread_id, "checkpoint_ns": "",
                               "checkpoint_id": None, "checkpoint_map": None},
                "parent_checkpoint": None, "created_at": None}
    channels = saved.checkpoint.get("channel_values", {})
    following = sorted(k[len(TRIGGER):] for k in channels if k.startswith(TRIGGER))
    by_task = interrupts_of(saved)
    name = following[0] if len(following) == 1 else ""
    tasks = [{"id": task_id, "name": name, "path": [], "error": None, "interrupts": items,
              "checkpoint": None, "state": None, "result": None}
             for task_id, items in by_task.items()]
    return {"values": values_of(saved), "next": following, "tasks": tasks,
            "interrupts": [i for items in by_task.values() for i in items],
            "metadata": lg_json(dict(saved.metadata or {})),
            "checkpoint": _checkpoint(saved.config),
            "parent_checkpoint": _checkpoint(saved.parent_config),
            "created_at": saved.checkpoint.get("ts")}


def latest(thread_id: str, checkpoint_id: str | None = None) -> Any:
    """The thread's checkpoint tuple (its latest, or ``checkpoint_id``), or None."""
    return get_checkpointer().get_tuple(_config(thread_id, checkpoint_id))


def thread_state(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any] | None:
    """None: the checkpoint asked for is not there."""
    saved = latest(thread_id, checkpoint_id)
    if saved is None and checkpoint_id:
        return None
    return state_of(saved, thread_id)


def thread_history(thread_id: str, *, limit: int, before: str | None = None,
                   metadata: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The thread's checkpoints, newest first (pruned threads keep their latest only:
    ``execution.checkpoint_pruning``)."""
    saved = get_checkpointer().list(_config(thread_id), filter=metadata or None,
                                    before=_config(thread_id, before) if before else None,
                                    limit=limit)
    return [state_of(item, thread_id) for item in saved]

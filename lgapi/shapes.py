"""Our rows in the Platform's shapes (``langgraph_sdk.schema``): Assistant, Thread, Run.

An assistant is a registered agent: ``graph_id`` and ``name`` are the agent's name, and
``assistant_id`` a UUID made from it (a client may use either). A thread is a
conversation (its id is the checkpointer's ``thread_id``); a run is an ``AgentRun``, one
for all the segments between its start and its end, so a resume goes on in the same
run_id. Statuses are read from the runs' business rows, never from the checkpoint.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from runs import registry
from runs.models import AgentRun, Conversation

ASSISTANTS = uuid.UUID("6a1f7a43-95a4-4d0e-9d51-5e0b8b1c2f37")
Status = AgentRun.Status

# AgentRun status → the Platform's run status. A paused run waits for a person:
# ``interrupted`` (the run stopped at an interrupt; the thread is ``interrupted`` too).
RUN_STATUS = {
    Status.QUEUED: "pending", Status.RUNNING: "running", Status.RESUMING: "running",
    Status.RETRYING: "running", Status.PAUSED: "interrupted", Status.COMPLETED: "success",
    Status.REJECTED: "success", Status.BLOCKED: "success", Status.FAILED: "error",
    Status.CANCELLED: "interrupted", Status.EXPIRED: "timeout", Status.WAITING: "pending",
}
# The thread's status, from its latest run's.
THREAD_STATUSES: dict[str, tuple[str, ...]] = {
    "busy": tuple(AgentRun.LIVE),
    "interrupted": (Status.PAUSED,),
    "error": (Status.FAILED, Status.EXPIRED),
    "idle": (Status.COMPLETED, Status.REJECTED, Status.BLOCKED, Status.CANCELLED),
}


def assistant_id(name: str) -> str:
    return str(uuid.uuid5(ASSISTANTS, name))


def agent_for(assistant: str) -> registry.Agent | None:
    """The agent an assistant id or graph id names (None: no such assistant)."""
    found = registry.get(assistant)
    if found is not None:
        return found
    return next((a for a in registry.all_agents() if assistant_id(a.name) == assistant), None)


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def assistant_json(agent: registry.Agent) -> dict[str, Any]:
    # The registry has no time of its own: the epoch, the same on every call.
    epoch = "1970-01-01T00:00:00+00:00"
    return {"assistant_id": assistant_id(agent.name), "graph_id": agent.name,
            "name": agent.name, "description": agent.description,
            "config": {}, "context": {}, "metadata": {"version": agent.version},
            "version": 1, "created_at": epoch, "updated_at": epoch}


def thread_status(latest: str | None) -> str:
    if latest is None:
        return "idle"
    return next((name for name, statuses in THREAD_STATUSES.items() if latest in statuses),
                "idle")


def thread_json(conversation: Conversation, latest: str | None, values: Any,
                interrupts: dict[str, list[Any]]) -> dict[str, Any]:
    return {"thread_id": conversation.thread_id, "created_at": _time(conversation.created_at),
            "updated_at": _time(conversation.updated_at),
            "state_updated_at": _time(conversation.updated_at),
            "metadata": {**conversation.metadata,
                         **({"graph_id": conversation.agent,
                             "assistant_id": assistant_id(conversation.agent)}
                            if conversation.agent else {})},
            "status": thread_status(latest), "values": values, "interrupts": interrupts,
            "config": {}, "error": None}


def run_json(run: AgentRun) -> dict[str, Any]:
    return {"run_id": str(run.id), "thread_id": run.thread_id,
            "assistant_id": assistant_id(run.agent), "created_at": _time(run.created_at),
            "updated_at": _time(run.updated_at), "status": RUN_STATUS.get(run.status, "error"),
            "metadata": run.metadata or {}, "multitask_strategy": "reject", "kwargs": {},
            "cancel_reason": None}

"""Which AG-UI events close a run's segment, from the run's status: the one mapping
used by pause, finish and cancel (in the worker) and by connect (rebuilding a thread).

paused → ``RUN_FINISHED{outcome: interrupt}`` with the pending interrupts;
completed / rejected / blocked → ``RUN_FINISHED{outcome: success}`` with
``result: {status, result}``; expired (a deadline passed with no default answer) →
``RUN_FINISHED{outcome: success}`` with ``result: {status: "expired", result: null,
reason}``; cancelled → ``RUN_FINISHED{outcome: cancelled}``; failed → ``RUN_ERROR``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ag_ui.core import BaseEvent, Interrupt

from agui.events import (
    interrupt_model,
    messages_snapshot,
    run_error,
    run_finished_cancelled,
    run_finished_interrupt,
    run_finished_success,
    run_started,
    state_snapshot,
)
from hitl.models import AgentInterrupt
from hitl.selectors import pending_interrupts
from runs.models import AgentRun

Status = AgentRun.Status


def interrupts_of(rows: Iterable[AgentInterrupt]) -> list[Interrupt]:
    """AgentInterrupt rows as AG-UI ``Interrupt`` objects."""
    return [interrupt_model(interrupt_id=r.interrupt_id, fmt=r.format,
                            expires_at=r.expires_at.isoformat() if r.expires_at else None)
            for r in rows]


def closing(run: AgentRun | None, *, thread_id: str, run_id: str,
            pending: Iterable[AgentInterrupt] | None = None) -> BaseEvent:
    """The event that ends an AG-UI run on ``run``'s current status (``None``: a thread
    with no run yet). ``pending``: the paused run's open interrupts, when at hand."""
    ids = {"thread_id": thread_id, "run_id": run_id}
    if run is None:
        return run_finished_success(**ids, result=None)
    if run.status == Status.PAUSED:
        rows = pending if pending is not None else pending_interrupts(run)
        return run_finished_interrupt(**ids, interrupts=interrupts_of(rows))
    if run.status == Status.CANCELLED:
        return run_finished_cancelled(**ids)
    if run.status == Status.FAILED:
        return run_error(message=run.error or "run failed", code="run_failed")
    if run.status == Status.EXPIRED:
        return run_finished_success(**ids, result={"status": run.status, "result": None,
                                                   "reason": run.error})
    if run.status in AgentRun.FINISHED:
        return run_finished_success(**ids, result={"status": run.status, "result": run.result})
    raise ValueError(f"run {run.id} is {run.status}: its segment has not ended")


def segment_end(run: AgentRun, *, state: dict[str, Any], messages: list[Any],
                pending: Iterable[AgentInterrupt] | None = None) -> list[BaseEvent]:
    """What the worker publishes when a segment ends: state, messages, closing event."""
    return [state_snapshot(state), messages_snapshot(messages),
            closing(run, thread_id=run.thread_id, run_id=str(run.id), pending=pending)]


def standalone_end(run: AgentRun) -> list[BaseEvent]:
    """A whole AG-UI run that only says how the run ended (no segment was running,
    e.g. a paused run cancelled)."""
    ids = {"thread_id": run.thread_id, "run_id": str(run.id)}
    return [run_started(**ids), closing(run, **ids)]


def rebuilt(run: AgentRun | None, *, thread_id: str, run_id: str, messages: list[Any],
            state: dict[str, Any]) -> list[BaseEvent]:
    """A thread as a client that comes back sees it (connect, when no segment is live)."""
    return [run_started(thread_id=thread_id, run_id=run_id), messages_snapshot(messages),
            state_snapshot(state), closing(run, thread_id=thread_id, run_id=run_id)]

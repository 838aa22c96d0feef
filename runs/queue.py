"""Runs that wait for their thread: LangGraph's ``multitask_strategy="enqueue"``.

A thread runs one run at a time (``AgentRun.ACTIVE``, one per thread). A run started
"behind" a busy thread is made ``waiting``; the run holding the thread is flagged
(``runs_waiting``). When that run ends (completed, rejected, blocked, failed, cancelled,
expired), the same transaction queues the oldest waiting run of the thread and enqueues
its task on commit. A paused run holds the thread until it is answered to its end,
cancelled or expired: a person's open question is never dropped for a queued run (where
LangGraph Server would start the queued run at once; docs/langgraph-api.md).

Lock order, everywhere: the conversation, then the holding run, then the waiting runs.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agentsite.errors import Conflict
from runs import services
from runs.models import AgentRun, Conversation

Status = AgentRun.Status


def holder_flag(*, conversation: Conversation) -> AgentRun | None:
    """The run holding the locked ``conversation``'s thread, locked and flagged as having
    a run waiting behind it; None when the thread is idle (start at once).

    The caller holds the conversation's lock, so no start interleaves; the holder may end
    meanwhile (its end queues a waiting run, which then holds the thread): read again."""
    for _ in range(3):
        found = (conversation.runs.filter(status__in=AgentRun.ACTIVE)
                 .values_list("pk", flat=True).first())
        if found is None:
            return None
        holder = services.run_locked(found)
        # Locked: the holder's end may have committed since the read above.
        if holder is not None and holder.status in AgentRun.ACTIVE:
            if not holder.runs_waiting:
                holder.runs_waiting = True
                holder.save(update_fields=["runs_waiting"])
            return holder
    raise Conflict("the thread's runs keep changing; try again", code="thread_busy")


def run_next_queue(*, ended: AgentRun) -> AgentRun | None:
    """``ended`` (locked, flagged, leaving the thread now) hands the thread to the oldest
    run waiting for it: ``waiting → queued``, audited, its task sent on commit. In the
    transaction of the end, so no start can take the thread between the two."""
    # Every waiting row locked (a LIMIT under FOR UPDATE may skip a row a concurrent
    # cancel just changed, and find none while another waits).
    waiting = list(AgentRun.objects.select_for_update()
                   .filter(thread_id=ended.thread_id, status=Status.WAITING)
                   .order_by("created_at", "id"))
    if not waiting:
        return None
    nxt = waiting[0]
    nxt.runs_waiting = len(waiting) > 1
    services.run_transition(run=nxt, to=Status.QUEUED, fields=("runs_waiting",),
                            payload={"after_run": str(ended.id),
                                     "after_status": ended.status})
    services.run_enqueue_on_commit(nxt)
    return nxt


def waiting_behind(run: AgentRun) -> dict[str, Any]:
    """The audit payload of a run made ``waiting``: which run it waits for."""
    return {"behind_run": str(run.id), "behind_status": run.status}



def not_waiting(runs: QuerySet[AgentRun]) -> QuerySet[AgentRun]:
    """``runs`` without those waiting for their thread. A thread's "latest run", to a page
    or a stream, is the run holding the thread (or the last one that ran): a run queued
    behind a paused one must not hide that run's questions."""
    return runs.exclude(status=Status.WAITING)

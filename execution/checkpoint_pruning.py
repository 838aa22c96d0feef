"""Once a run has ended, its thread keeps only its latest checkpoints.

LangGraph saves a checkpoint after every step (plus each task's writes and the values
they changed), and nothing ever deleted them: about 35 KB per run on the bench
database, kept forever. What anything reads later is the thread's latest checkpoint of
each namespace: a new run on the thread starts from it, and AG-UI connect rebuilds the
thread's state from it (the chat page reads the business tables). So with
``CHECKPOINT_HISTORY=latest`` (the default) a beat sweep hands the threads of runs that
ended at least ``CHECKPOINT_PRUNE_AFTER_SECONDS`` ago to PostgresSaver's own
``prune(strategy="keep_latest")``, which keeps the latest checkpoint of each namespace
with its pending writes and blobs, each thread in its own transaction, safe beside a
run appending to the thread.

A thread whose next run is already active is left alone: that run's own end prunes it.
Threads that use a LangGraph ``DeltaChannel`` (rebuilt from older checkpoints) keep
their history, since ``prune`` refuses them, as does a thread whose prune fails for
another reason (logged). Either way the ended run is marked seen to
(``AgentRun.checkpoints_pruned``), so the sweep's queue only moves forward. A thread
that a concurrent transaction changed (SerializationFailure, deadlock) is tried again
at the next sweep, and with Postgres unreachable the sweep stops and marks nothing.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import psycopg
from django.conf import settings
from django.utils import timezone
from langgraph.checkpoint.base import BaseCheckpointSaver
from psycopg import errors as pg_errors

from execution.checkpointer import get_checkpointer
from runs.models import AgentRun

log = logging.getLogger(__name__)

BATCH = 200  # runs per sweep; a backlog (after an upgrade) drains over several sweeps
_NOTHING = {"runs": 0, "threads_pruned": 0, "threads_busy": 0, "threads_kept": 0}


def sweep(*, older_than: float | None = None, batch: int = BATCH,
          saver: BaseCheckpointSaver | None = None) -> dict[str, int]:
    """Prune the checkpoints of threads whose run ended; returns counts for the log.
    ``saver``: this process's checkpointer unless given (a test gives one that fails)."""
    if settings.AGENTSITE_CHECKPOINT_HISTORY == "all":
        return dict(_NOTHING)
    wait = settings.CHECKPOINT_PRUNE_AFTER_SECONDS if older_than is None else older_than
    runs = list(AgentRun.objects.filter(
        finished_at__isnull=False, checkpoints_pruned=False,
        finished_at__lte=timezone.now() - timedelta(seconds=wait),
    ).order_by("finished_at").values_list("pk", "thread_id")[:batch])
    if not runs:
        return dict(_NOTHING)
    threads = {thread_id for _pk, thread_id in runs}
    busy = set(AgentRun.objects.filter(thread_id__in=threads, status__in=AgentRun.ACTIVE)
               .values_list("thread_id", flat=True))
    saver = saver or get_checkpointer()
    pruned, kept, retry = 0, 0, set()
    for thread_id in sorted(threads - busy):
        try:
            saver.prune([thread_id], strategy="keep_latest")
            pruned += 1
        except NotImplementedError:
            kept += 1  # a DeltaChannel thread: its latest value needs its history
        except (pg_errors.SerializationFailure, pg_errors.DeadlockDetected):
            retry.add(thread_id)  # changed meanwhile: the next sweep tries again
        except psycopg.OperationalError:
            raise  # Postgres unreachable: nothing is marked, the next sweep starts over
        except Exception:  # noqa: BLE001 - one bad thread must not stall the queue
            log.exception("checkpoints of thread %s not pruned; its history is kept",
                          thread_id)
            kept += 1
    done = [pk for pk, thread_id in runs if thread_id not in retry]
    # No lock: a flag only this sweep sets, on rows nothing else changes once ended.
    AgentRun.objects.filter(pk__in=done).update(checkpoints_pruned=True)
    return {"runs": len(done), "threads_pruned": pruned, "threads_busy": len(busy),
            "threads_kept": kept}

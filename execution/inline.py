"""Segments run by the process that made them owed work, with no broker round trip.

In the web process (``agentsite/asgi.py`` installs it), the transaction that starts or
resumes a run claims the segment itself when this process has a free slot
(``AGENTSITE_INLINE_SEGMENTS``): the run turns ``running`` under this process's lease in
the same commit as the decision, and a thread of this process runs the graph right
after the commit. Without a free slot the segment goes to the Celery worker as before.
That saves a resumed segment the broker hop and a claim transaction, and under load it
lets the web process's CPU take part of the graph work.

What the tests prove still holds, because it rests on the run's row and not on who runs
the segment:
- a decision is consumed once: the claim is written under the run's lock, in the
  decision's own transaction;
- nothing waits on a paused run: the thread returns when the segment pauses;
- a crash is recovered: the segment runs under a lease that a heartbeat renews. If this
  process dies, the lease lapses and a worker's reaper hands the segment to a worker,
  which goes on from its last checkpoint (``execution.reaper``).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from django.db import close_old_connections, transaction

from agentsite import timing
from agentsite.celery import app as celery_app
from execution import executor, lifecycle
from execution.lifecycle import Segment
from execution.reaper import Heartbeat
from execution.tasks import TRANSIENT
from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from runs.services import EXECUTE_TASK, run_inline_claim_set

log = logging.getLogger(__name__)


class InlineSegments:
    """Up to ``slots`` segments at a time in this process's own threads."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.busy = 0  # claimed and not yet ended, queued or running
        self.lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="segment")
        self.worker = f"inline@{socket.gethostname()}:{os.getpid()}"

    def claim(self, run: AgentRun, audits: Sequence[AuditLog],
              answered: Sequence[AgentInterrupt] | None) -> bool:
        """Inside the transaction that made ``run`` owed work (run locked): claim its
        segment if a slot is free (saving the run and ``audits`` with the claim's own);
        run it after commit. ``answered``: as ``lifecycle.run_claim_inline``."""
        with self.lock:
            if self.busy >= self.slots:
                return False
        segment = lifecycle.run_claim_inline(run=run, worker=self.worker, audits=audits,
                                             answered=answered)
        if segment is None:
            return False
        # The slot is counted from the commit: a rolled-back claim never took one. Two
        # commits racing for the last slot both run (one queued a moment in the pool).
        transaction.on_commit(lambda: self._submit(segment))
        return True

    def _submit(self, segment: Segment) -> None:
        timing.mark(segment.run_id, "enqueue")  # benchmarks only: as a Celery send would
        with self.lock:
            self.busy += 1
        # The lease is renewed from now, also while the segment waits for a thread.
        heartbeat = Heartbeat(segment)
        heartbeat.start()
        try:
            self.pool.submit(self._run, segment, heartbeat)
        except RuntimeError:  # shutting down: a worker goes on once the lease lapses
            heartbeat.stop()
            self._release()

    def _run(self, segment: Segment, heartbeat: Heartbeat) -> None:
        timing.mark(segment.run_id, "task_start")
        try:
            executor.execute(segment, lost=heartbeat.lost)
        except TRANSIENT as exc:
            # As the Celery task's retry: the worker takes the segment back under its
            # lease and goes on from the last checkpoint.
            log.warning("run %s: transient failure inline, handing over: %s",
                        segment.run_id, exc)
            self._hand_over(segment)
        except Exception as exc:
            log.exception("run %s failed", segment.run_id)
            lifecycle.run_fail(run_id=segment.run_id, error=f"{type(exc).__name__}: {exc}",
                               segment=segment)
        finally:
            heartbeat.stop()
            close_old_connections()
            self._release()

    def _hand_over(self, segment: Segment) -> None:
        try:
            celery_app.send_task(EXECUTE_TASK, args=(segment.run_id, segment.segments_done),
                                 kwargs={"lease": segment.lease})
        except Exception as exc:  # broker down too: the lease lapses, the reaper sends it
            log.warning("run %s: hand-over not sent: %s", segment.run_id, exc)

    def _release(self) -> None:
        with self.lock:
            self.busy -= 1


def install(slots: int) -> InlineSegments | None:
    """Run up to ``slots`` segments in this process (0: none, all go to the broker)."""
    runner = InlineSegments(slots) if slots > 0 else None
    run_inline_claim_set(runner.claim if runner else None)
    return runner

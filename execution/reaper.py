"""The reaper: finds runs owed a task and sends it again; and each segment's heartbeat.

A run's committed status is the durable record of the work it is owed, so nothing is
lost when a send fails or a worker dies:

- ``queued`` / ``resuming`` and untouched for ``AGENTSITE_REQUEUE_AFTER_SECONDS``: its
  task was never sent (the broker was down at commit) or the broker lost it. Sent again.
- ``retrying`` and overdue by as long: the retry's delayed task was lost. Sent again.
- ``running`` with a lapsed lease: its worker stopped renewing it (killed, or cut off
  from Postgres for a whole lease). Released and sent again; the next claim takes the
  segment over from its last checkpoint (``execution.lifecycle.run_claim``).
- A notification or webhook delivery (``hitl.models.Notification``, ``WebhookDelivery``)
  still pending ``AGENTSITE_REQUEUE_AFTER_SECONDS`` after it was due: its task was lost
  the same way. Sent again (``hitl.notify.owed_resend``).

Every worker process runs one reaper thread (so it works wherever a worker runs: the
launcher, docker-compose, the tests). Two reapers do not send the same run twice in a
sweep: rows are taken with ``SKIP LOCKED`` and stamped before the sends; and a
duplicate send would be harmless anyway (a segment is claimed once).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from execution import lifecycle
from execution.lifecycle import Segment
from hitl import notify
from runs.models import AgentRun
from runs.services import run_enqueue
from streams.db import release_db_connections

log = logging.getLogger(__name__)
Status = AgentRun.Status
BATCH = 200


def owed_work(now: datetime | None = None) -> QuerySet[AgentRun]:
    """Runs a worker should be busy with but none is: overdue for a (re)send."""
    now = now or timezone.now()
    waited = now - timedelta(seconds=settings.AGENTSITE_REQUEUE_AFTER_SECONDS)
    return AgentRun.objects.filter(
        Q(status__in=(Status.QUEUED, Status.RESUMING), updated_at__lt=waited)
        | Q(status=Status.RETRYING, retry_at__lt=waited, updated_at__lt=waited)
        | Q(status=Status.RUNNING) & (Q(lease_expires_at__lt=now)
                                      | Q(lease_expires_at__isnull=True)))


def sweep(now: datetime | None = None) -> list[str]:
    """Send the task of every run owed work; return their ids."""
    now = now or timezone.now()
    sends: list[tuple[str, int]] = []
    with transaction.atomic():
        for run in (owed_work(now).select_for_update(skip_locked=True)
                    .order_by("updated_at")[:BATCH]):
            if run.status == Status.RUNNING:
                # Released, with a deadline: the takeover may claim it at once; if
                # none does within a lease, the next sweep sends again.
                done = run.segments - 1
                AgentRun.objects.filter(pk=run.pk).update(
                    lease_owner="",
                    lease_expires_at=now + timedelta(seconds=settings.AGENTSITE_LEASE_SECONDS))
                log.warning("run %s: lease of %s lapsed, handing the segment over",
                            run.id, run.lease_owner or "nobody")
            else:
                # A retry goes on with the segment that failed (execution.retries).
                done = run.segments - (run.status == Status.RETRYING)
                AgentRun.objects.filter(pk=run.pk).update(updated_at=now)  # next try later
                log.warning("run %s: %s with no task, sending it again", run.id, run.status)
            sends.append((str(run.id), done))
    # After commit: no network call inside the transaction.
    for run_id, done in sends:
        run_enqueue(run_id=run_id, segments_done=done)
    return [run_id for run_id, _ in sends]


class Reaper(threading.Thread):
    """Sweeps every ``AGENTSITE_SWEEP_SECONDS`` until stopped."""

    def __init__(self) -> None:
        super().__init__(name="agentsite-reaper", daemon=True)
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(settings.AGENTSITE_SWEEP_SECONDS):
            try:
                close_old_connections()
                sweep()
                notify.owed_resend()
            except Exception as exc:  # Postgres or broker away: try again next sweep
                log.warning("reaper: sweep failed: %s", exc)
                connection.close()
        connection.close()


class Heartbeat(threading.Thread):
    """Renews a segment's lease every third of it while the segment runs.

    ``lost`` is set once the run is no longer ours (cancelled, failed, or taken over
    after our lease lapsed): the executor stops between graph steps. A Postgres error
    only skips a beat; a lease survives two failed beats.
    """

    def __init__(self, segment: Segment) -> None:
        super().__init__(name=f"lease-{segment.run_id}", daemon=True)
        self.segment = segment
        self.lost = threading.Event()
        self.done = threading.Event()

    def run(self) -> None:
        interval = settings.AGENTSITE_LEASE_SECONDS / 3
        try:
            while not self.done.wait(interval):
                try:
                    held = lifecycle.lease_renew(self.segment)
                    release_db_connections()  # not kept from the pool between beats
                    if not held:
                        self.lost.set()
                        return
                except Exception as exc:
                    log.warning("run %s: lease renewal failed: %s", self.segment.run_id, exc)
                    connection.close()
        finally:
            connection.close()

    def stop(self) -> None:
        self.done.set()

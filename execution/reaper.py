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
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from agentsite.process_thread import OnePerProcess
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


class Heartbeat:
    """Renews a segment's lease every third of it while the segment runs.

    ``lost`` is set once the run is no longer ours (cancelled, failed, or taken over
    after our lease lapsed): the executor stops between graph steps. A Postgres error
    only skips a beat; a lease survives two failed beats.

    Every held lease of the process is renewed by one thread (``_Renewer``): a thread
    of its own per segment cost ~130 µs of CPU to start and stop, on every segment, for
    renewals that a segment shorter than a third of the lease never makes.
    """

    def __init__(self, segment: Segment) -> None:
        self.segment = segment
        self.lost = threading.Event()
        self.due = 0.0  # the next renewal (time.monotonic()), set by the renewer

    def start(self) -> None:
        _Renewer.of_this_process().add(self)

    def stop(self) -> None:
        _Renewer.of_this_process().discard(self)

    def beat(self) -> None:
        """Renew the lease now (on the renewer's thread)."""
        try:
            held = lifecycle.lease_renew(self.segment)
            release_db_connections()  # not kept from the pool between beats
            if not held:
                self.lost.set()
        except Exception as exc:  # noqa: BLE001 - a skipped beat; the lease outlives two
            log.warning("run %s: lease renewal failed: %s", self.segment.run_id, exc)
            connection.close()


class _Renewer(OnePerProcess):
    """This process's one lease renewer: each held lease every third of
    ``AGENTSITE_LEASE_SECONDS`` from its start."""

    def __init__(self) -> None:
        super().__init__(name="agentsite-lease-renewer")
        self.held: set[Heartbeat] = set()
        self.changed = threading.Condition()

    def add(self, heartbeat: Heartbeat) -> None:
        with self.changed:
            heartbeat.due = time.monotonic() + settings.AGENTSITE_LEASE_SECONDS / 3
            self.held.add(heartbeat)
            self.changed.notify()

    def discard(self, heartbeat: Heartbeat) -> None:
        with self.changed:
            self.held.discard(heartbeat)  # a beat under way may still finish

    def run(self) -> None:
        while True:
            with self.changed:
                now = time.monotonic()
                due = [h for h in self.held if h.due <= now]
                if not due:
                    first = min((h.due for h in self.held), default=now + 3600)
                    self.changed.wait(first - now)
                    continue
                for heartbeat in due:
                    heartbeat.due = now + settings.AGENTSITE_LEASE_SECONDS / 3
            for heartbeat in due:  # outside the lock: starts and stops do not wait
                with self.changed:
                    if heartbeat not in self.held:
                        continue  # stopped meanwhile
                heartbeat.beat()
                if heartbeat.lost.is_set():
                    self.discard(heartbeat)

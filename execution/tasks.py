"""Celery tasks: take ids, stay thin, call services, mark the run failed on final failure."""

from __future__ import annotations

import logging

import psycopg
import redis.exceptions
from celery import shared_task
from celery.signals import worker_init, worker_process_init, worker_ready, worker_shutdown
from django.db import OperationalError, close_old_connections

from execution import executor, graphs, lifecycle, retries
from execution.reaper import Heartbeat, Reaper
from execution.stop import StopWatch
from observability import metrics, tracing
from runs.services import EXECUTE_TASK

log = logging.getLogger(__name__)

# Infrastructure hiccups are retried; an exception raised by the graph itself is not.
TRANSIENT = (OperationalError, psycopg.OperationalError, ConnectionError,
             redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)

_reaper: Reaper | None = None


@worker_process_init.connect
def _fresh_process(**_: object) -> None:
    # A forked child must not reuse the parent's pooled connections.
    from execution.checkpointer import close_checkpointer

    graphs.reset_compiled()
    close_checkpointer()


@worker_init.connect
def _check_agents(**_: object) -> None:
    # Refuse to start with an agent whose builder gives no runnable graph: the error
    # names it (SystemExit: Celery's signal dispatch would only log an Exception).
    try:
        graphs.check_all()
    except graphs.AgentGraphError as err:
        log.critical("%s", err)
        raise SystemExit(f"agentsite worker: {err}") from err


@worker_ready.connect
def _start_reaper(**_: object) -> None:
    # One reaper per worker (its main process): sends runs owed a task (execution.reaper).
    global _reaper
    _reaper = Reaper()
    _reaper.start()


@worker_shutdown.connect
def _stop_reaper(**_: object) -> None:
    if _reaper is not None:
        _reaper.stopping.set()


@shared_task(name=EXECUTE_TASK, bind=True, acks_late=True, max_retries=3, default_retry_delay=2)
def run_execute(self, run_id: str, segments_done: int | None = None, lease: str = "") -> None:
    """Claim the run's next segment (or take over its lapsed one) and execute it.

    ``lease``: set by our own retry, which may take back the segment its failed attempt
    still holds."""
    close_old_connections()
    segment = None
    heartbeat = None
    # Listening before the claim: a cancel after it is heard (execution.stop).
    stop = StopWatch(run_id).start()
    try:
        segment = lifecycle.run_claim(run_id=run_id, segments_done=segments_done, lease=lease,
                                      worker=self.request.hostname or "")
        if segment is None:
            return
        heartbeat = Heartbeat(segment)
        heartbeat.start()
        tracing.segment_attributes(run_id=run_id, segment=segment.segments_done + 1)
        with metrics.segment_observed(agent=segment.agent, takeover=segment.takeover,
                                      enqueued_at=self.request.get(metrics.ENQUEUED_AT_HEADER)):
            executor.execute(segment, lost=heartbeat.lost, stop=stop)
    except TRANSIENT as exc:
        if self.request.retries < self.max_retries:
            log.warning("run %s: transient failure, retrying: %s", run_id, exc)
            # If even the retry cannot be sent (broker down), the lease lapses and the
            # reaper sends the segment again.
            raise self.retry(exc=exc, kwargs={
                "run_id": run_id, "segments_done": segments_done,
                "lease": segment.lease if segment else lease}) from exc
        lifecycle.run_fail(run_id=run_id, error=f"infrastructure failure: {exc}",
                           code="infrastructure_error", segment=segment)
    except Exception as exc:
        _segment_failed(run_id, segment, exc)
    finally:
        stop.close()
        if heartbeat is not None:
            heartbeat.stop()
        close_old_connections()


def _segment_failed(run_id: str, segment: lifecycle.Segment | None, exc: Exception) -> None:
    """A transient provider failure waits for a retry while the run's budget lasts; any
    other error (or the budget spent) fails the run: plain words for a provider's
    failure, the exception itself for the agent's own."""
    failure = retries.judge(exc)
    if segment is not None and failure.transient:
        outcome = lifecycle.run_retry_later(segment=segment, failure=failure)
        if outcome == "retrying":
            log.warning("run %s: %s, retrying later: %s", run_id, failure.reason, failure.detail)
            return
        if outcome == "gone":
            return  # cancelled or taken over meanwhile: not ours to fail
    log.error("run %s failed: %s", run_id, failure.detail, exc_info=exc)
    if failure.provider:
        lifecycle.run_fail(run_id=run_id, segment=segment, code="provider_error",
                           error=retries.failed_words(failure, exhausted=failure.transient),
                           detail=failure.detail)
    else:
        lifecycle.run_fail(run_id=run_id, segment=segment, error=failure.detail,
                           detail=failure.detail)


@shared_task(name="execution.history_repair", acks_late=True)  # execution.history.REPAIR_TASK
def history_repair(run_id: str) -> int:
    """Answer the tool calls a run that ended early left unanswered (execution.history)."""
    from execution import history

    close_old_connections()
    try:
        return history.repair_ended(run_id)
    finally:
        close_old_connections()

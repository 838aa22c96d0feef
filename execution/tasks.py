"""Celery tasks: take ids, stay thin, call services, mark the run failed on final failure."""

from __future__ import annotations

import logging

import psycopg
from celery import shared_task
from celery.signals import worker_process_init
from django.db import OperationalError, close_old_connections

from execution import executor, graphs, lifecycle
from runs.services import EXECUTE_TASK

log = logging.getLogger(__name__)

# Infrastructure hiccups are retried; an exception raised by the graph itself is not.
TRANSIENT = (OperationalError, psycopg.OperationalError, ConnectionError)


@worker_process_init.connect
def _fresh_process(**_: object) -> None:
    # A forked child must not reuse the parent's pooled connections.
    from execution.checkpointer import close_checkpointer

    graphs.reset_compiled()
    close_checkpointer()


@shared_task(name=EXECUTE_TASK, bind=True, acks_late=True, max_retries=3, default_retry_delay=2)
def run_execute(self, run_id: str, segments_done: int | None = None) -> None:
    close_old_connections()
    delivery = self.request.delivery_info or {}
    redelivered = bool(delivery.get("redelivered")) or self.request.retries > 0
    try:
        segment = lifecycle.run_claim(run_id=run_id, segments_done=segments_done,
                                     redelivered=redelivered)
        if segment is None:
            return
        executor.execute(segment)
    except TRANSIENT as exc:
        if self.request.retries < self.max_retries:
            log.warning("run %s: transient failure, retrying: %s", run_id, exc)
            raise self.retry(exc=exc) from exc
        lifecycle.run_fail(run_id=run_id, error=f"infrastructure failure: {exc}",
                          code="infrastructure_error")
    except Exception as exc:
        log.exception("run %s failed", run_id)
        lifecycle.run_fail(run_id=run_id, error=f"{type(exc).__name__}: {exc}")
    finally:
        close_old_connections()

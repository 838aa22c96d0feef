"""Celery signals for the metrics: the time each task message is sent (a header, read
back by the worker for the queue wait), and the multiprocess files of a pool child
that exits (``mark_process_dead``). Connected by ``agentsite.celery``."""

from __future__ import annotations

import time
from typing import Any

from celery import signals

from observability import metrics


@signals.before_task_publish.connect(weak=False)
def _stamp_enqueued(headers: dict[str, Any] | None = None, **_: object) -> None:
    if headers is not None:
        headers[metrics.ENQUEUED_AT_HEADER] = time.time()


@signals.worker_process_shutdown.connect(weak=False)
def _child_exited(pid: int | None = None, **_: object) -> None:
    metrics.process_exited(pid)


@signals.worker_shutdown.connect(weak=False)
def _worker_exited(**_: object) -> None:
    metrics.process_exited()

"""Celery signals: the time each task message is sent (a header, read back by the
worker for the queue wait), the multiprocess metric files of a pool child that exits
(``mark_process_dead``), and the run id of a task's log lines. Connected by
``agentsite.celery``."""

from __future__ import annotations

import os
import time
from typing import Any

from celery import signals
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.multiprocess import MultiProcessCollector

from observability import logs, metrics

# Tasks whose first argument is a run id (runs.services.EXECUTE_TASK, execution.history).
RUN_TASKS = frozenset({"runs.tasks.run_execute", "execution.history_repair"})
_RUN_TOKENS: dict[str, Any] = {}  # task id → the log context's token, reset after the task


@signals.before_task_publish.connect(weak=False)
def _stamp_enqueued(headers: dict[str, Any] | None = None, **_: object) -> None:
    if headers is not None:
        headers[metrics.ENQUEUED_AT_HEADER] = time.time()


@signals.worker_ready.connect(weak=False)
def _serve_metrics(**_: object) -> None:
    """``METRICS_PORT``: the worker's main process serves its pool's metrics there (a
    worker in a container of its own, whose files no web process can read)."""
    port = os.environ.get("METRICS_PORT")
    if port and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        start_http_server(int(port), registry=registry)


@signals.worker_process_shutdown.connect(weak=False)
def _child_exited(pid: int | None = None, **_: object) -> None:
    metrics.process_exited(pid)


@signals.worker_shutdown.connect(weak=False)
def _worker_exited(**_: object) -> None:
    metrics.process_exited()


@signals.task_prerun.connect(weak=False)
def _run_logged(task_id: str = "", task: Any = None, args: Any = None, kwargs: Any = None,
                **_: object) -> None:
    """A task about a run (its ``run_id``, the first argument) logs with that run's id."""
    if getattr(task, "name", "") not in RUN_TASKS:
        return
    run_id = (kwargs or {}).get("run_id") or (args[0] if args else None)
    if isinstance(run_id, str) and task_id:
        _RUN_TOKENS[task_id] = logs.RUN_ID.set(run_id)


@signals.task_postrun.connect(weak=False)
def _run_log_done(task_id: str = "", **_: object) -> None:
    token = _RUN_TOKENS.pop(task_id, None)
    if token is not None:
        logs.RUN_ID.reset(token)

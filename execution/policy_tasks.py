"""The periodic sweeps, scheduled by Celery beat (``CELERY_BEAT_SCHEDULE``): deadlines,
and the checkpoint history of ended runs."""

from __future__ import annotations

import logging

import redis
from celery import shared_task
from django.db import close_old_connections

from agentsite import heartbeat
from execution import checkpoint_pruning, deadlines

log = logging.getLogger(__name__)

SWEEP_TASK = "hitl.sweep"


@shared_task(name=SWEEP_TASK, ignore_result=True)
def interrupts_sweep() -> dict[str, int]:
    close_old_connections()
    try:
        heartbeat.sweep_tick()  # beat is alive: /healthz reads it
    except redis.RedisError as exc:  # the sweep itself needs only Postgres
        log.warning("beat tick not recorded: %s", exc)
    try:
        return deadlines.sweep()
    finally:
        close_old_connections()


PRUNE_TASK = "execution.checkpoints_prune"


@shared_task(name=PRUNE_TASK, ignore_result=True)
def checkpoints_prune() -> dict[str, int]:
    """Ended runs' threads keep only their latest checkpoints (``CHECKPOINT_HISTORY``)."""
    close_old_connections()
    try:
        return checkpoint_pruning.sweep()
    finally:
        close_old_connections()

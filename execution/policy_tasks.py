"""The periodic deadline sweep, scheduled by Celery beat (``CELERY_BEAT_SCHEDULE``)."""

from __future__ import annotations

from celery import shared_task
from django.db import close_old_connections

from execution import deadlines

SWEEP_TASK = "hitl.sweep"


@shared_task(name=SWEEP_TASK, ignore_result=True)
def interrupts_sweep() -> dict[str, int]:
    close_old_connections()
    try:
        return deadlines.sweep()
    finally:
        close_old_connections()

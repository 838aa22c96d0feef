"""``GET /healthz``: can this process serve, and is work moving?

503 when Postgres or Redis does not answer (this process cannot serve). What says work
is not moving is reported, and makes it a 503 only with ``?strict`` (``degraded_by``
names which): no worker alive; runs overdue for work; beat silent (the sweep it sends
has not run for ``BEAT_STALE_SECONDS``: deadlines and escalations stop); interrupts
still pending ``BEAT_STALE_SECONDS`` past their deadline. A web process is ready before
any worker is, and an orchestrator must not restart web processes because workers are
gone.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from agentsite import heartbeat
from execution.reaper import owed_work
from hitl.models import AgentInterrupt
from runs.models import AgentRun

# A few sweep periods (beat sends one every HITL_SWEEP_SECONDS; a busy worker may drop
# one unrun, its ``expires``), and never under 10 s.
BEAT_STALE_SECONDS = max(5 * settings.HITL_SWEEP_SECONDS, 10.0)


def _error(exc: Exception) -> dict:
    return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}


def interrupts_overdue(now: datetime) -> int:
    """Open questions of paused runs still pending ``BEAT_STALE_SECONDS`` past their
    deadline: the deadline sweep is not running (or not keeping up)."""
    return AgentInterrupt.objects.filter(
        status=AgentInterrupt.Status.PENDING, run__status=AgentRun.Status.PAUSED,
        expires_at__lt=now - timedelta(seconds=BEAT_STALE_SECONDS)).count()


def healthz(request: HttpRequest) -> JsonResponse:
    body: dict = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        body["postgres"] = {"ok": True}
        # Runs owed work (waiting for a task, or a lapsed lease) for RUN_OVERDUE_SECONDS:
        # the reaper could not get them moving (no worker, or no broker). A long segment
        # whose worker keeps its lease is not overdue.
        now = timezone.now()
        since = now - timedelta(seconds=settings.RUN_OVERDUE_SECONDS)
        body["runs_overdue"] = owed_work(since).count()
        body["interrupts_overdue"] = interrupts_overdue(now)
    except DatabaseError as exc:
        body["postgres"], body["runs_overdue"] = _error(exc), None
        body["interrupts_overdue"] = None
    try:
        names = heartbeat.alive()
        body["redis"] = {"ok": True}
        body["workers"] = {"alive": len(names), "names": names}
        last = heartbeat.last_sweep()
        age = None if last is None else round(max(time.time() - last, 0.0), 1)
        body["beat"] = {"ok": age is not None and age <= BEAT_STALE_SECONDS,
                        "last_tick_seconds_ago": age, "stale_after": BEAT_STALE_SECONDS}
    except redis.RedisError as exc:
        body["redis"], body["workers"] = _error(exc), {"alive": None, "names": []}
        body["beat"] = {"ok": None, "last_tick_seconds_ago": None,
                        "stale_after": BEAT_STALE_SECONDS}
    body["ok"] = body["postgres"]["ok"] and body["redis"]["ok"]
    body["degraded_by"] = [
        name for name, bad in (("workers", not body["workers"]["alive"]),
                               ("runs_overdue", bool(body["runs_overdue"])),
                               ("interrupts_overdue", bool(body["interrupts_overdue"])),
                               ("beat", body["beat"]["ok"] is False)) if bad]
    body["degraded"] = bool(body["degraded_by"])
    failing = not body["ok"] or ("strict" in request.GET and body["degraded"])
    return JsonResponse(body, status=503 if failing else 200)

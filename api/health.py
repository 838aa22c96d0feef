"""``GET /healthz``: can this process serve, and is work moving?

503 when Postgres or Redis does not answer (this process cannot serve). Workers and runs
overdue for work are reported, and make it a 503 only with ``?strict``: a web process
is ready before any worker is, and an orchestrator must not restart web processes
because workers are gone.
"""

from __future__ import annotations

from datetime import timedelta

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from agentsite import heartbeat
from execution.reaper import owed_work


def _error(exc: Exception) -> dict:
    return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}


def healthz(request: HttpRequest) -> JsonResponse:
    body: dict = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        body["postgres"] = {"ok": True}
        # Runs owed work (waiting for a task, or a lapsed lease) for RUN_OVERDUE_SECONDS:
        # the reaper could not get them moving (no worker, or no broker). A long segment
        # whose worker keeps its lease is not overdue.
        since = timezone.now() - timedelta(seconds=settings.RUN_OVERDUE_SECONDS)
        body["runs_overdue"] = owed_work(since).count()
    except DatabaseError as exc:
        body["postgres"], body["runs_overdue"] = _error(exc), None
    try:
        names = heartbeat.alive()
        body["redis"] = {"ok": True}
        body["workers"] = {"alive": len(names), "names": names}
    except redis.RedisError as exc:
        body["redis"], body["workers"] = _error(exc), {"alive": None, "names": []}
    body["ok"] = body["postgres"]["ok"] and body["redis"]["ok"]
    body["degraded"] = not body["workers"]["alive"] or bool(body["runs_overdue"])
    failing = not body["ok"] or ("strict" in request.GET and body["degraded"])
    return JsonResponse(body, status=503 if failing else 200)

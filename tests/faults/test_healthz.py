"""GET /healthz: Postgres, Redis, worker heartbeats, runs overdue for work, beat's last
sweep and interrupts overdue past their deadline."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from runs.models import AgentRun
from tests.helpers import start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def test_healthy_system(live):
    # Beat's first sweep may not have run yet when the session's services have just started.
    deadline = time.monotonic() + 30
    while True:
        r = httpx.get(f"{live['base_url']}/healthz", timeout=10)
        if r.json()["beat"]["ok"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] is True and body["postgres"]["ok"] and body["redis"]["ok"]
    assert body["workers"]["alive"] >= 1, body  # the suite's worker beats
    assert body["runs_overdue"] == 0 and body["degraded"] is False, body
    assert body["interrupts_overdue"] == 0 and body["degraded_by"] == []
    # Beat sends the deadline sweep every 0.5 s here; the sweep records its run.
    assert body["beat"]["ok"] is True
    assert body["beat"]["last_tick_seconds_ago"] <= body["beat"]["stale_after"]
    assert httpx.get(f"{live['base_url']}/healthz?strict", timeout=10).status_code == 200


def test_beat_dead_and_interrupts_past_their_deadline_fail_strict(api, live, no_sweep):
    from api.health import BEAT_STALE_SECONDS
    from hitl.models import AgentInterrupt

    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    # Its question's deadline passed long ago, and no sweep (beat is stopped) expired it.
    AgentInterrupt.objects.filter(run_id=run["id"]).update(
        expires_at=timezone.now() - timedelta(seconds=BEAT_STALE_SECONDS + 600))
    strict = httpx.get(f"{live['base_url']}/healthz?strict", timeout=10)
    assert strict.status_code == 503, strict.text
    assert strict.json()["interrupts_overdue"] == 1
    assert "interrupts_overdue" in strict.json()["degraded_by"]
    assert httpx.get(f"{live['base_url']}/healthz", timeout=10).status_code == 200
    AgentInterrupt.objects.filter(run_id=run["id"]).update(expires_at=None)
    # Beat stays dead: once its last sweep is a few periods old, strict says so.
    deadline = time.monotonic() + BEAT_STALE_SECONDS + 15
    while True:
        body = httpx.get(f"{live['base_url']}/healthz?strict", timeout=10)
        if body.json()["beat"]["ok"] is False or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert body.status_code == 503 and body.json()["degraded_by"] == ["beat"], body.text
    assert body.json()["beat"]["last_tick_seconds_ago"] > BEAT_STALE_SECONDS
    assert body.json()["interrupts_overdue"] == 0 and body.json()["workers"]["alive"] >= 1


def test_overdue_runs_are_counted_and_fail_strict(api, live):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    # As if a worker took it and vanished ten minutes ago.
    long_ago = timezone.now() - timedelta(seconds=settings.RUN_OVERDUE_SECONDS + 600)
    AgentRun.objects.filter(pk=run["id"]).update(status="running", updated_at=long_ago,
                                                  lease_expires_at=long_ago)
    try:
        # Held locked meanwhile: the worker's reaper (every 5 s, skip_locked) would hand the
        # lapsed segment over and it would stop being overdue between update and GETs.
        with transaction.atomic():
            AgentRun.objects.select_for_update().get(pk=run["id"])
            plain = httpx.get(f"{live['base_url']}/healthz", timeout=10)
            strict = httpx.get(f"{live['base_url']}/healthz?strict", timeout=10)
    finally:
        AgentRun.objects.filter(pk=run["id"]).update(status="paused")
    assert plain.status_code == 200 and plain.json()["runs_overdue"] == 1
    assert plain.json()["degraded"] is True
    assert strict.status_code == 503 and strict.json()["runs_overdue"] == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthz_with(**env: str) -> tuple[int, dict]:
    """GET /healthz in a fresh process whose Postgres or Redis URL points at a closed port."""
    code = ("import django, json, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
            "'agentsite.settings'); django.setup(); from django.test import Client; "
            "r = Client().get('/healthz'); print(r.status_code, r.content.decode())")
    full = {**os.environ, "SECRET_KEY": "health", "DB_POOL_TIMEOUT": "2", **env}
    full.pop("AGENTSITE_EMBEDDED", None)
    result = subprocess.run([sys.executable, "-c", code], env=full, cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    status, body = result.stdout.strip().splitlines()[-1].split(" ", 1)
    return int(status), json.loads(body)


def test_redis_down_is_503(transactional_db):
    # On the test database: the main one of a fresh checkout has no tables.
    from tests.conftest import _database_url

    status, body = _healthz_with(REDIS_URL=f"redis://127.0.0.1:{_closed_port()}/0",
                                 DATABASE_URL=_database_url())
    assert status == 503
    assert body["redis"]["ok"] is False and body["postgres"]["ok"] is True
    assert body["workers"]["alive"] is None


def test_postgres_down_is_503():
    status, body = _healthz_with(DATABASE_URL=f"postgresql://u@127.0.0.1:{_closed_port()}/x")
    assert status == 503
    assert body["postgres"]["ok"] is False and body["redis"]["ok"] is True
    assert body["runs_overdue"] is None

"""The web process SIGKILLed in the middle of a request that carries an Idempotency-Key,
and the client retries with the same key and body: the request happens exactly once.

Killed while its answer was being stored, after the view's work (the earlier scheme had
committed that work by then and left the key "in progress": the retry got 409s for a
minute, then started a second run, or found its own decision "already_decided"): nothing
of the request committed, so the retry runs it, once. Killed while its transaction
commits: the commit lands, and the retry replays the answer the client never received.

Postgres triggers (test-only, on the key table) hold the request at those two points.
"""

from __future__ import annotations

import signal
import threading
import uuid

import httpx
import pytest
from django.db import connection

from runs.models import AgentRun, AuditLog
from tests.faults.cluster import client, cluster_fixture, wait_all
from tests.faults.test_idempotency_keys import on_stored_answer
from tests.helpers import pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)
cluster = pytest.fixture(name="cluster")(cluster_fixture)

BODY = {"agent": "dev", "input": {"topic": "crash"}}


def _sleeping_backend() -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()")
        row = cursor.fetchone()
    return row[0] if row else None


def _send_and_kill(url: str, token: str, path: str, body: dict, key: dict, web,
                   at_commit: bool) -> None:
    """POST, and SIGKILL the web process while Postgres holds the request at the point."""
    def post() -> None:
        try:
            with client(url, token) as doomed:
                doomed.post(path, json=body, headers=key, timeout=90)
        except httpx.HTTPError:
            pass  # the server died: the client never learns what happened

    sent = threading.Thread(target=post)
    with on_stored_answer("PERFORM pg_sleep(5)" if at_commit else "PERFORM pg_sleep(120)",
                          at_commit=at_commit):
        sent.start()
        backend = wait_all(_sleeping_backend, 30)
        web.stop(signal.SIGKILL)
        if at_commit:
            # Past the request's last statement: Postgres finishes the commit on its own.
            wait_all(lambda: _sleeping_backend() is None, 30)
        else:
            # The answer never reached Postgres (the process died first): end what it sent.
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
            wait_all(lambda: _sleeping_backend() is None, 30)
    sent.join(30)


@pytest.mark.parametrize("surface", ["start", "resume"])
def test_web_killed_before_the_answer_is_stored_the_retry_runs_once(cluster, users, surface):
    c = cluster()
    c.worker()
    web, url = c.web()
    api = client(url, users["owner_token"])
    key = {"Idempotency-Key": f"crash-{uuid.uuid4()}"}
    if surface == "start":
        path, body, created = "/api/runs/", BODY, 201
    else:
        run = wait_run(api, start_run(api)["id"], "paused")
        path, created = f"/api/runs/{run['id']}/resume/", 202
        body = {"interrupt_id": pending(run)["interrupt_id"], "payload": {"value": "Once"}}

    _send_and_kill(url, users["owner_token"], path, body, key, web, at_commit=False)

    _web, url = c.web("web-again")
    api = client(url, users["owner_token"])
    retry = api.post(path, json=body, headers=key)
    assert retry.status_code == created, retry.text
    assert "Idempotent-Replayed" not in retry.headers  # nothing had committed: it ran now
    replay = api.post(path, json=body, headers=key)
    assert replay.json() == retry.json() and replay.headers["Idempotent-Replayed"] == "true"
    run_id = retry.json()["id"]
    assert list(AgentRun.objects.values_list("id", flat=True)) == [uuid.UUID(run_id)]
    assert AuditLog.objects.filter(action="decision").count() == (surface == "resume")
    wait_run(api, run_id, "paused")
    assert AgentRun.objects.get(pk=run_id).segments == (1 if surface == "start" else 2)


def test_web_killed_while_committing_the_retry_replays(cluster, users):
    c = cluster()
    c.worker()
    web, url = c.web()
    key = {"Idempotency-Key": f"crash-{uuid.uuid4()}"}

    _send_and_kill(url, users["owner_token"], "/api/runs/", BODY, key, web, at_commit=True)

    # Committed, with its answer; the task its commit would have sent is the reaper's.
    (run_id,) = AgentRun.objects.values_list("id", flat=True)
    _web, url = c.web("web-again")
    api = client(url, users["owner_token"])
    retry = api.post("/api/runs/", json=BODY, headers=key)
    assert retry.status_code == 201, retry.text
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert retry.json()["id"] == str(run_id)
    assert AgentRun.objects.count() == 1
    wait_run(api, str(run_id), "paused")

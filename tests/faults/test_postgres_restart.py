"""Postgres goes away for a few seconds mid-run (every connection of the test database
dropped, new ones refused, as in a restart) and comes back. Afterwards no request gets a
500, and no run is stuck: the segment that was running is finished (retried or taken
over after its lease lapsed), and answers go through.

The suite's Postgres is shared with other test processes, so the outage is made on the
test database only: ALLOW_CONNECTIONS off, its backends terminated, then on again.
"""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection

from runs.models import AgentRun
from tests.faults.cluster import client, cluster_fixture, wait_all
from tests.helpers import pending, wait_run

pytestmark = pytest.mark.django_db(transaction=True)
cluster = pytest.fixture(name="cluster")(cluster_fixture)


def _admin() -> psycopg.Connection:
    d = connection.settings_dict
    return psycopg.connect(host=d["HOST"], port=d["PORT"], user=d["USER"],
                           password=d["PASSWORD"] or None, dbname="postgres", autocommit=True)


def _outage(seconds: float) -> None:
    name = connection.settings_dict["NAME"]
    connection.close()
    with _admin() as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = %s AND pid <> pg_backend_pid()", [name])
            time.sleep(seconds)
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


@pytest.fixture
def session_web_healed(api):
    """The outage is made on the test database, which the session's own web process
    (``tests.conftest.services``) uses too: its pooled connections die with the rest. Its
    first request after that may wait out DB_POOL_TIMEOUT and answer 503, as the product
    documents (``agentsite.pool_recovery``); that request is made here, before the next
    test, which would otherwise be the one to get it."""
    yield
    client = api("owner")
    deadline = time.monotonic() + 60
    while client.get("/api/runs/").status_code != 200:
        assert time.monotonic() < deadline, "the session's web process did not recover"
        time.sleep(0.5)


def test_no_500_and_no_stuck_run_after_a_postgres_outage(cluster, users, session_web_healed):
    c = cluster(SLOW_STEP_SECONDS="1")
    c.worker(supervised=True)
    _web, url = c.web()
    api = client(url, users["owner_token"])
    paused = wait_run(api, api.post("/api/runs/", json={"agent": "dev"}).json()["id"], "paused")
    running = api.post("/api/runs/", json={"agent": "slow_counted"}).json()
    wait_all(lambda: AgentRun.objects.get(pk=running["id"]).status == "running", 30)
    for _ in range(3):  # pooled connections in the web process
        assert api.get("/api/runs/").status_code == 200

    _outage(3.0)  # longer than the 2 s lease: the running segment's lease lapses
    back = time.monotonic()

    statuses = [api.get("/api/runs/").status_code for _ in range(5)]
    r = api.post(f"/api/runs/{paused['id']}/resume/", json={
        "interrupt_id": pending(paused)["interrupt_id"], "payload": {"value": "after"}})
    statuses.append(r.status_code)
    statuses += [api.get(f"/api/runs/{running['id']}/").status_code for _ in range(3)]
    assert 500 not in statuses and r.status_code == 202, (statuses, r.text)

    def settled() -> bool:
        return (AgentRun.objects.get(pk=running["id"]).status == "paused"
                and AgentRun.objects.get(pk=paused["id"]).status == "paused"
                and AgentRun.objects.get(pk=paused["id"]).segments == 2)

    try:
        wait_all(settled, timeout=30)
    except AssertionError:
        raise AssertionError(str(list(AgentRun.objects.values_list(
            "agent", "status", "segments", "error")))) from None
    recovered = time.monotonic() - back
    run = AgentRun.objects.get(pk=running["id"])
    assert run.error == "" and run.segments == 1
    print(f"\nPostgres back → running segment paused and answer applied: {recovered:.1f}s; "
          f"worker restarts {len(c.restarts)}")

"""Pooled connections a Postgres restart killed are replaced on checkout, not served as 500s."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)


def _kill_other_backends() -> int:
    """Terminate every other session on the test database, as a Postgres restart does:
    each is gone when this returns (``pg_terminate_backend`` waits up to 5 s), as after a
    restart; without the wait a checkout a moment later could still find its socket
    quiet and the connection not yet ended."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


def test_no_500_after_pooled_connections_die(api):
    client = api("owner")
    # A concurrent warm-up, so the server's pool holds all its connections: a restart
    # kills every one, and each costs a failed check.
    with ThreadPoolExecutor(16) as workers:
        warm = list(workers.map(lambda _: api("owner").get("/api/runs/").status_code,
                                range(48)))
    assert warm == [200] * 48
    assert _kill_other_backends() >= 1
    statuses = [client.get("/api/runs/").status_code for _ in range(10)]
    # Django's stock pool checks a borrowed connection and backs off 1 s, 2 s, 4 s …
    # between failed checks (psycopg_pool), so the first request may wait out
    # DB_POOL_TIMEOUT and answer 503 (the pool cannot be given another check through
    # Django's public options); never a 500, and the dead connections are gone after it.
    assert statuses[1:] == [200] * 9 and statuses[0] in (200, 503)
    # After that 503 the pool's idle connections were all tested at once
    # (agentsite.pool_recovery): no dead one is left for a later burst to wait on.
    time.sleep(1)
    with ThreadPoolExecutor(16) as workers:
        later = list(workers.map(lambda _: api("owner").get("/api/runs/").status_code,
                                 range(48)))
    assert later == [200] * 48


def test_checkpointer_pool_replaces_dead_connections(api):
    from execution.checkpointer import get_checkpointer

    saver = get_checkpointer()
    config = {"configurable": {"thread_id": "stale-check", "checkpoint_ns": ""}}
    assert saver.get_tuple(config) is None  # the pool now holds an open connection
    assert _kill_other_backends() >= 1
    for _ in range(3):
        assert saver.get_tuple(config) is None
    # The kill also ended the web server's pooled connections: its first request may be
    # the one 503 (above); after it the pool is clean again for the tests that follow.
    client = api("owner")
    assert client.get("/api/runs/").status_code in (200, 503)
    assert [client.get("/api/runs/").status_code for _ in range(3)] == [200] * 3

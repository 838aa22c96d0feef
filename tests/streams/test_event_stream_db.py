"""An open stream holds no Postgres connection: a web process stays within its pool."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.db import connection

from agentsite.processes import web_started
from tests.helpers import start_run, wait_run
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)

POOL_MAX = 3
STREAMS = 15


def backends(app_name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                       [app_name])
        return cursor.fetchone()[0]


@pytest.fixture
def small_pool_web(live, tmp_path):
    """A second web process with a 3-connection pool, its connections named for counting."""
    app_name = f"agentsite-sse-test-{os.getpid()}"
    env = {**live["env"], "DB_POOL_MAX": str(POOL_MAX), "DB_POOL_TIMEOUT": "5",
           "PGAPPNAME": app_name}
    web, port = web_started(env, tmp_path)  # on another port if its port was taken
    base_url = f"http://127.0.0.1:{port}"
    try:
        yield {"base_url": base_url, "app_name": app_name, "web": web}
    finally:
        web.stop()


def test_open_streams_hold_no_database_connection(api, users, small_pool_web):
    owner = api("owner")
    runs = [wait_run(owner, start_run(owner)["id"], "paused") for _ in range(3)]
    headers = {"Authorization": f"Token {users['owner_token']}"}
    client = httpx.Client(base_url=small_pool_web["base_url"], headers=headers,
                          timeout=httpx.Timeout(30, pool=None),
                          limits=httpx.Limits(max_connections=STREAMS + 5))
    before = backends(small_pool_web["app_name"])
    assert 1 <= before <= POOL_MAX

    def open_one(i: int) -> SseStream:
        url = (f"/api/runs/{runs[i % 3]['id']}/events/" if i % 2 else "/api/events/")
        stream = SseStream(client, url)
        assert stream.status == 200, stream.status
        if i % 2:  # a run stream replays from its first event
            assert stream.next().json()["type"] == "RUN_STARTED"
        else:
            assert stream.next(skip_control=False).event == "stream-open"
        return stream

    # More streams than pool connections, all authenticated and checked against the DB.
    with ThreadPoolExecutor(STREAMS) as pool:
        streams = list(pool.map(open_one, range(STREAMS)))
    try:
        during = backends(small_pool_web["app_name"])
        assert during <= POOL_MAX, during
        # The pool is free for ordinary requests while every stream stays open.
        r = client.get("/api/runs/")
        assert r.status_code == 200 and r.json()["count"] == 3
        assert backends(small_pool_web["app_name"]) <= POOL_MAX
        # And the open streams are still live.
        wait_run(owner, runs[0]["id"], "paused")
        r = owner.post(f"/api/runs/{runs[0]['id']}/cancel/")
        assert r.status_code in (200, 202), r.text
        queue_stream = streams[0]
        while queue_stream.next().json()["run_id"] != runs[0]["id"]:
            pass  # (changes of the runs' pauses may still be on their way)
    finally:
        for stream in streams:
            stream.close()
        client.close()
    assert "Traceback" not in small_pool_web["web"].log()

"""Redis (broker and event store) goes down while runs are started, answered and
cancelled, and comes back on its port. Every request in the outage gets either a 2xx
that is honoured later or a 503 with nothing committed, and afterwards every run
reaches its right end with no second request from the client.

The test has its own Redis (the suite's is shared with other tests) and its own web
and worker processes on it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from hitl.models import AgentInterrupt
from runs.models import AgentRun
from tests.faults.cluster import client, cluster_fixture, wait_all
from tests.faults.test_embedded_restart import _embedded, _wait_dead
from tests.helpers import pending, wait_run

pytestmark = pytest.mark.django_db(transaction=True)
cluster = pytest.fixture(name="cluster")(cluster_fixture)


def _kill_redis(data_dir: Path) -> None:
    pid = int((data_dir / "redis" / "redis.pid").read_text())
    os.kill(pid, signal.SIGKILL)  # a crash
    _wait_dead(pid)


def test_requests_during_a_redis_outage_are_honoured_after_it(cluster, users, tmp_path):
    data_dir = tmp_path / "redis-data"
    url = _embedded(data_dir, "print(e.ensure_redis())")
    c = cluster(redis_url=url, SECRET_KEY="faults-test-key", SLOW_STEP_SECONDS="1")
    try:
        c.worker(supervised=True)
        _web, base = c.web()
        api = client(base, users["owner_token"])
        to_answer = wait_run(api, api.post("/api/runs/", json={"agent": "dev"}).json()["id"],
                             "paused")
        to_cancel = wait_run(api, api.post("/api/runs/", json={"agent": "dev"}).json()["id"],
                             "paused")
        # Running while Redis goes: its steps publish events and write to Redis.
        running = api.post("/api/runs/", json={"agent": "slow_counted"}).json()
        wait_all(lambda: AgentRun.objects.get(pk=running["id"]).status == "running", 30)

        _kill_redis(data_dir)
        down = time.monotonic()
        before = AgentRun.objects.count()
        started = api.post("/api/runs/", json={"agent": "dev"})
        answered = api.post(f"/api/runs/{to_answer['id']}/resume/", json={
            "interrupt_id": pending(to_answer)["interrupt_id"], "payload": {"value": "Zed"}})
        cancelled = api.post(f"/api/runs/{to_cancel['id']}/cancel/")
        in_outage = time.monotonic() - down

        # 2xx, or 503 with nothing committed; never another 5xx.
        assert started.status_code in (201, 503), started.text
        assert answered.status_code in (202, 503), answered.text
        assert cancelled.status_code in (200, 503), cancelled.text
        if started.status_code == 503:
            assert AgentRun.objects.count() == before
        if answered.status_code == 503:
            assert AgentInterrupt.objects.get(run_id=to_answer["id"]).status == "pending"
        if cancelled.status_code == 503:
            assert AgentRun.objects.get(pk=to_cancel["id"]).status == "paused"

        time.sleep(2)  # an outage of a few seconds
        again = _embedded(data_dir, "print(e.ensure_redis())")
        assert again == url
        back = time.monotonic()

        # No second request: the reaper and the worker finish what was accepted.
        def settled() -> bool:
            ok = AgentRun.objects.get(pk=running["id"]).status == "paused"
            if started.status_code == 201:
                ok &= AgentRun.objects.get(pk=started.json()["id"]).status == "paused"
            if answered.status_code == 202:
                run = AgentRun.objects.get(pk=to_answer["id"])
                ok &= run.status == "paused" and run.segments == 2
            if cancelled.status_code == 200:
                ok &= AgentRun.objects.get(pk=to_cancel["id"]).status == "cancelled"
            return ok

        try:
            wait_all(settled, timeout=30)
        except AssertionError:
            raise AssertionError(
                f"outage requests {in_outage:.1f}s; runs: "
                f"{list(AgentRun.objects.values_list('agent', 'status', 'segments'))}; "
                f"worker restarts {len(c.restarts)}") from None
        recovered = time.monotonic() - back
        # The API serves again, and the run answered in the outage goes on.
        r = api.get(f"/api/runs/{to_answer['id']}/")
        assert r.status_code == 200
        if answered.status_code == 202:
            assert pending(r.json())["kind"] == "select"
        print(f"\noutage requests took {in_outage:.1f}s "
              f"(start {started.status_code}, answer {answered.status_code}, "
              f"cancel {cancelled.status_code}); Redis back → all settled {recovered:.1f}s; "
              f"worker restarts {len(c.restarts)}")
    finally:
        c.stop()  # before its Redis: a worker whose broker is gone stops slowly
        _embedded(data_dir, "e.stop_redis()")

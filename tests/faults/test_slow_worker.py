"""A slow worker is not a dead one: a step longer than the whole lease keeps its
segment, because the heartbeat renews the lease while the step runs."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, AuditLog
from tests.faults.cluster import RECOVERY_ENV, client, cluster_fixture, effects, wait_all

pytestmark = pytest.mark.django_db(transaction=True)
cluster = pytest.fixture(name="cluster")(cluster_fixture)


def test_step_longer_than_the_lease_is_not_taken_over(cluster, users):
    step = 2 * float(RECOVERY_ENV["LEASE_SECONDS"])  # each step outlasts the lease twice
    c = cluster(SLOW_STEP_SECONDS=str(step))
    c.worker("worker-a")
    c.worker("worker-b")  # idle, sweeping: it would take over a lapsed lease
    _web, url = c.web()
    api = client(url, users["owner_token"])
    run = api.post("/api/runs/", json={"agent": "slow_counted"}).json()
    wait_all(lambda: AgentRun.objects.get(pk=run["id"]).status == "paused", 4 * step + 30)
    assert "taken over" not in c.logs() and "lapsed" not in c.logs()
    assert effects(run["thread_id"]) == ["work1", "work2"]  # each step once
    assert list(AuditLog.objects.filter(run_id=run["id"], action="run.status")
                .values_list("to_status", flat=True)) == ["queued", "running", "paused"]

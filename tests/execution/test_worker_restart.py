"""Nothing waits in memory: a new worker process resumes a run paused by an old one."""

from __future__ import annotations

import pytest

from runs.models import AgentRun
from tests.helpers import answer, answer_and_wait, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_run_resumes_from_checkpoint_after_worker_replaced(api, live):
    client = api("owner")
    worker = live["worker"]
    run = wait_run(client, start_run(client, input={"topic": "restart"})["id"], "paused")
    run = answer_and_wait(client, run, {"value": "Phoenix"})
    old_pid = worker.proc.pid

    worker.stop()
    assert worker.proc.poll() is not None
    # Answer while no worker runs: the decision is recorded, the resume waits in the broker.
    response = answer(client, run, {"value": "blue"})
    assert response.status_code == 202, response.text
    assert AgentRun.objects.get(pk=run["id"]).status == "resuming"

    worker.start()
    assert worker.proc.pid != old_pid
    run = wait_run(client, run["id"], "paused")
    run = answer_and_wait(client, run, {"values": ["logging"]})
    run = answer_and_wait(client, run, {"approved": True})
    assert run["status"] == "completed"
    assert run["result"]["name"] == "Phoenix"  # answered before the restart
    assert run["result"]["color"] == "blue"  # answered while no worker ran

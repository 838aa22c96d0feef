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


def test_a_warm_shutdown_puts_a_held_task_back_on_the_queue(live):
    """Without the broker's ack emulation a task the worker took lives only in it until
    acknowledged: a warm shutdown must put it back (kombu restores it when its channel
    closes). A delayed task (a retry's countdown) is such a one: taken at once, held."""
    import time

    import redis
    from django.conf import settings

    from agentsite.celery import app
    from execution.policy_tasks import SWEEP_TASK
    from tests.conftest import QUEUE

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    worker = live["worker"]
    held = app.send_task(SWEEP_TASK, countdown=60, queue=QUEUE).id  # harmless to run

    def queued() -> bool:
        return any(held.encode() in message for message in broker.lrange(QUEUE, 0, -1))

    deadline = time.monotonic() + 10
    while queued() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not queued(), "the worker did not take the delayed task"
    worker.stop()  # SIGTERM: a warm shutdown
    try:
        assert queued(), "the held task was lost at the warm shutdown"
    finally:
        worker.start()

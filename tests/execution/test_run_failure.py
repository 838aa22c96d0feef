"""A graph that raises: the run ends `failed` with the error, RUN_ERROR is published,
and nothing more can be answered or resumed."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, AuditLog
from tests.agui_rules import validate_events
from tests.helpers import (
    answer,
    counter_expires_with_events,
    published_events,
    start_run,
    wait_run,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_graph_error_fails_the_run(api):
    client = api("owner")
    run = wait_run(client, start_run(client, agent="faulty")["id"], "paused")
    assert answer(client, run, {"value": "hello"}).status_code == 202
    failed = wait_run(client, run["id"], "failed")
    assert "RuntimeError: boom after 'hello'" in failed["error"]
    assert failed["pending_interrupts"] == []

    db_run = AgentRun.objects.get(pk=run["id"])
    assert db_run.finished_at is not None
    last = AuditLog.objects.filter(run=db_run, action="run.status").last()
    assert (last.from_status, last.to_status, last.payload) == (
        "running", "failed", {"code": "agent_error"})

    runs = validate_events(published_events(run["id"]))
    assert runs[-1][-1]["type"] == "RUN_ERROR" and runs[-1][-1]["code"] == "agent_error"
    assert "boom" in runs[-1][-1]["message"]
    assert counter_expires_with_events(run["id"])

    again = answer(client, run, {"value": "again"})
    assert again.status_code == 409
    assert client.post(f"/api/runs/{run['id']}/cancel/").json()["code"] == "run_finished"

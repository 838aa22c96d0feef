"""Fifty people answer the same interrupt at once: exactly one answer is consumed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from execution.checkpointer import get_checkpointer
from runs.models import AgentRun, AuditLog
from tests.helpers import pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_fifty_concurrent_submissions_one_accepted(api, live, users):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    interrupt_id = pending(run)["interrupt_id"]
    url = f"{live['base_url']}/api/runs/{run['id']}/resume/"
    token = users["owner_token"]

    def submit(i: int) -> tuple[int, dict]:
        with httpx.Client(timeout=60) as c:
            r = c.post(url, headers={"Authorization": f"Token {token}"},
                       json={"interrupt_id": interrupt_id, "payload": {"value": f"name-{i}"}})
            return r.status_code, r.json()

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(submit, range(50)))

    codes = sorted(code for code, _ in results)
    assert codes.count(202) == 1, codes
    assert codes.count(409) == 49, codes
    assert {body["code"] for code, body in results if code == 409} <= {"already_decided",
                                                                      "run_not_paused"}
    winner = next(body for code, body in results if code == 202)

    run = wait_run(client, run["id"], "paused")
    assert pending(run)["kind"] == "select"
    db_run = AgentRun.objects.get(pk=run["id"])
    # Resumed exactly once: one segment for the start, one for the single resume.
    assert db_run.segments == 2
    assert AuditLog.objects.filter(run=db_run, action="decision").count() == 1
    assert AuditLog.objects.filter(run=db_run, action="run.status",
                                   to_status="resuming").count() == 1
    decided = db_run.interrupts.get(interrupt_id=interrupt_id)
    assert decided.status == "applied"
    state = get_checkpointer().get_tuple({"configurable": {"thread_id": run["thread_id"]}})
    values = state.checkpoint["channel_values"]
    assert values["trace"] == ["ask_name"]
    assert values["name"] == decided.decision["value"]
    assert winner["id"] == run["id"]

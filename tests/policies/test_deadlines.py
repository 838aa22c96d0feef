"""Deadlines and escalation on real services: a 1 s deadline, Celery beat sweeping every
0.5 s (tests/conftest.py). With a default the run resumes with it (actor "timeout");
without one the run ends ``expired`` on every surface and its thread is free again."""

from __future__ import annotations

import time

from django.test import Client

from hitl.models import AgentInterrupt
from runs.models import AuditLog
from tests.helpers import (
    counter_expires_with_events,
    pending,
    published_events,
    start_run,
    wait_run,
)
from tests.policies.conftest import ask


def test_deadline_with_default_resumes_with_it(client_of):
    owner = client_of("owner")
    default = {"approved": False, "reason": "nobody answered"}
    run = ask(owner, timeout=1, default=default)
    item = pending(run)
    assert item["expires_at"] and item["request"]["policy"]["default"] == default
    done = wait_run(owner, run["id"], "completed", timeout=20)
    assert done["result"] == {"answer": default}
    row = AgentInterrupt.objects.get(pk=item["id"])
    assert row.status == "applied" and row.decided_by is None
    audit = AuditLog.objects.get(run_id=run["id"], action="decision")
    assert audit.actor_label == "timeout" and audit.payload == {"default": default}


def test_deadline_without_default_expires_the_run(client_of, people):
    owner = client_of("owner")
    run = ask(owner, kind="input", timeout=1)
    item = pending(run)
    ended = wait_run(owner, run["id"], "expired", timeout=20)
    assert ended["pending_interrupts"] == [] and "expired" in ended["error"]
    assert AgentInterrupt.objects.get(pk=item["id"]).status == "expired"
    assert AuditLog.objects.filter(run_id=run["id"], to_status="expired",
                                   actor_label="timeout").count() == 2  # interrupt + run
    # A late answer is refused.
    r = owner.post(f"/api/runs/{run['id']}/resume/",
                   json={"interrupt_id": item["interrupt_id"], "payload": {"value": "late"}})
    assert r.status_code == 410
    # AG-UI: a RUN_FINISHED whose result says so.
    finished = [e for e in published_events(run["id"]) if e["type"] == "RUN_FINISHED"]
    assert finished[-1]["result"]["status"] == "expired"
    assert counter_expires_with_events(run["id"])  # the run's event counter goes too
    # The chat page says so.
    client = Client()
    client.force_login(people["owner"])
    page = client.get(f"/c/{run['conversation_id']}/").content.decode()
    assert "status--expired" in page and "Expired" in page
    # The thread is free again.
    again = start_run(owner, "policy_ask", thread_id=run["thread_id"],
                      input={"kind": "approval"})
    assert wait_run(owner, again["id"], "paused")["thread_id"] == run["thread_id"]


def test_deadline_from_the_agent_policy(client_of):
    owner = client_of("owner")
    run = ask(owner, agent="policy_deadline")
    assert pending(run)["expires_at"]
    wait_run(owner, run["id"], "expired", timeout=20)


def test_invalid_default_fails_where_the_graph_asks(client_of):
    owner = client_of("owner")
    run = start_run(owner, "policy_ask", input={"policy": {"timeout": 1,
                                                           "default": {"approved": "maybe"}}})
    failed = wait_run(owner, run["id"], "failed")
    assert "approved" in failed["error"]


def test_escalation_adds_the_groups(client_of, people, live):
    owner = client_of("owner")
    run = ask(owner, assignees=["alice"], escalate_after=1, escalate_to=["legal"])
    item = pending(run)
    carol = client_of("carol")
    r = carol.post(f"/api/interrupts/{item['id']}/decision/", json={"payload": {"approved": True}})
    assert (r.status_code, r.json()["code"]) == (403, "not_assigned")
    row = AgentInterrupt.objects.get(pk=item["id"])
    deadline = time.monotonic() + 20
    while row.escalated_at is None and time.monotonic() < deadline:
        time.sleep(0.1)
        row.refresh_from_db()
    assert row.escalated_at is not None
    shown = carol.get(f"/api/interrupts/{item['id']}/").json()
    assert shown["assignees"] == ["alice"] and shown["assigned_groups"] == ["legal"]
    assert AuditLog.objects.filter(run_id=run["id"],
                                   payload__escalated_to=["legal"]).count() == 1
    # Carol (in legal) was told, by the worker (console email backend: its log).
    subject = "Subject: [agentsite] Escalated to you: Ship it?"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and subject not in live["worker"].log():
        time.sleep(0.1)
    escalated = live["worker"].log().split(subject)
    assert len(escalated) > 1 and "To: carol@example.com" in escalated[1][:400]
    r = carol.post(f"/api/interrupts/{item['id']}/decision/", json={"payload": {"approved": True}})
    assert r.status_code == 202, r.text
    wait_run(owner, run["id"], "completed")

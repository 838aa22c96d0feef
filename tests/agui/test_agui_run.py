"""AG-UI run endpoint: a whole `dev` run over POST /agui/dev/, resumes by interrupt id."""

from __future__ import annotations

import time

import pytest

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from tests.agui_client import interrupts, resume, run_input, run_segment

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]


def test_full_dev_run_over_agui(api):
    client = api("owner")
    body = run_input(forwardedProps={"input": {"topic": "agui"}},
                     messages=[{"id": "u1", "role": "user", "content": "hello"}])
    thread = body["threadId"]
    run = run_segment(client, "dev", body)
    assert run[0]["protocolVersion"] == "1.0"
    kinds = []
    for payload in ANSWERS:
        (pending,) = interrupts(run)
        kinds.append(pending["metadata"]["type"])
        assert pending["responseSchema"]["type"] == "object"
        assert any(e["type"] == "STATE_SNAPSHOT" for e in run)
        assert any(e["type"] == "MESSAGES_SNAPSHOT" for e in run)
        run = run_segment(client, "dev", resume(thread, pending["id"], payload))
    assert kinds == ["input", "select", "multiSelect", "approval"]
    finished = run[-1]
    assert finished["outcome"]["type"] == "success"
    assert finished["result"]["status"] == "completed"
    assert finished["result"]["result"]["name"] == "Apollo"
    assert finished["result"]["result"]["extras"] == ["metrics", "tracing"]
    text = "".join(e["delta"] for e in run if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert "Apollo" in text
    steps = [e["stepName"] for e in run if e["type"] == "STEP_STARTED"]
    assert "summarize" in steps

    db_run = AgentRun.objects.get(thread_id=thread)
    assert db_run.status == "completed" and db_run.conversation_id.hex == thread.replace("-", "")
    assert db_run.messages.filter(role="user").get().content == "hello"
    decisions = AuditLog.objects.filter(run=db_run, action="decision")
    assert decisions.count() == 4 and {d.actor_label for d in decisions} == {"owner"}
    assert set(db_run.interrupts.values_list("status", flat=True)) == {"applied"}


def test_run_on_thread_with_pending_interrupt_is_refused(api):
    client = api("owner")
    body = run_input()
    (pending,) = interrupts(run_segment(client, "dev", body))
    again = client.post("/agui/dev/", json=run_input(body["threadId"]))
    assert again.status_code == 409, again.text
    assert again.json()["code"] == "pending_interrupts"
    assert again.json()["pending_interrupt_ids"] == [pending["id"]]
    assert pending["id"] in again.json()["detail"]
    assert AgentRun.objects.filter(thread_id=body["threadId"]).count() == 1


def test_cancelled_resume_cancels_the_run(api):
    client = api("owner")
    body = run_input()
    (pending,) = interrupts(run_segment(client, "dev", body))
    run = run_segment(client, "dev", resume(body["threadId"], pending["id"], status="cancelled"))
    assert run[-1]["outcome"]["type"] == "cancelled"
    db_run = AgentRun.objects.get(thread_id=body["threadId"])
    assert db_run.status == "cancelled"
    assert db_run.interrupts.get().status == AgentInterrupt.Status.CANCELLED


def test_cancelled_approval_is_a_rejection(api):
    client = api("owner")
    body = run_input()
    thread = body["threadId"]
    run = run_segment(client, "dev", body)
    for payload in ANSWERS[:3]:
        run = run_segment(client, "dev", resume(thread, interrupts(run)[0]["id"], payload))
    run = run_segment(client, "dev", resume(thread, interrupts(run)[0]["id"], status="cancelled"))
    assert run[-1]["outcome"]["type"] == "success"
    assert run[-1]["result"]["status"] == "rejected"
    assert run[-1]["result"]["result"]["reason"] == "cancelled by user"


def test_new_run_on_a_finished_thread_continues_the_conversation(api):
    client = api("owner")
    body = run_input()
    (pending,) = interrupts(run_segment(client, "dev", body))
    run_segment(client, "dev", resume(body["threadId"], pending["id"], status="cancelled"))
    again = run_segment(client, "dev", run_input(body["threadId"]))
    assert interrupts(again)[0]["metadata"]["type"] == "input"
    assert AgentRun.objects.filter(thread_id=body["threadId"]).count() == 2


def test_vanished_client_does_not_stop_the_run(api, live):
    """The client hangs up right after the headers: the run still reaches its interrupt,
    and the next resume (from another connection) carries on."""
    client = api("owner")
    body = run_input()
    with client.stream("POST", "/agui/dev/", json=body) as r:
        assert r.status_code == 200
    deadline = time.monotonic() + 30
    while AgentRun.objects.get(thread_id=body["threadId"]).status != "paused":
        assert time.monotonic() < deadline, "run did not pause without its client"
        time.sleep(0.05)
    pending = AgentRun.objects.get(thread_id=body["threadId"]).interrupts.get()
    run = run_segment(client, "dev", resume(body["threadId"], pending.interrupt_id,
                                            {"value": "Ghost"}))
    assert interrupts(run)[0]["metadata"]["type"] == "select"


def test_reviewer_resumes_the_owners_run_over_agui(api):
    """A reviewer answers through the owner's thread (by its id): the run resumes and the
    audit names the reviewer. An outsider's answer is a 404 (tests/agui/test_agui_bad_input)."""
    body = run_input(forwardedProps={"input": {"topic": "review"}})
    (pending,) = interrupts(run_segment(api("owner"), "dev", body))
    run = run_segment(api("reviewer"), "dev",
                      resume(body["threadId"], pending["id"], {"value": "Vega"}))
    assert interrupts(run)[0]["id"] != pending["id"]  # the next question: it went on
    row = AgentInterrupt.objects.get(interrupt_id=pending["id"])
    assert row.decided_by.username == "reviewer" and row.decision == {"value": "Vega"}
    assert AuditLog.objects.filter(run=row.run, action=AuditLog.Action.DECISION,
                                   actor__username="reviewer").count() == 1

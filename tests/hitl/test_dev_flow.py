"""The dev agent, end to end through the REST API, the real worker and the checkpointer."""

from __future__ import annotations

import pytest

from execution.checkpointer import get_checkpointer
from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog, Message
from tests.agui_rules import validate_events
from tests.helpers import answer_and_wait, pending, published_events, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_dev_agent_goes_through_four_interrupts_to_completed(api):
    client = api("owner")
    run = start_run(client, input={"topic": "the rocket"}, message="let's go")
    run = wait_run(client, run["id"], "paused")

    kinds = []
    for payload in ({"value": "Apollo"}, {"value": "green"},
                    {"values": ["metrics", "tracing"]}, {"approved": True}):
        kinds.append(pending(run)["kind"])
        run = answer_and_wait(client, run, payload)
    assert kinds == ["input", "select", "multiSelect", "approval"]
    assert run["status"] == "completed", run
    assert run["result"] == {"name": "Apollo", "color": "green",
                             "extras": ["metrics", "tracing"], "approved": True, "reason": ""}

    # The summary went into the run's one assistant message, and reflects every answer.
    summary = Message.objects.get(pk=run["assistant_message_id"]).content
    for word in ("the rocket", "Apollo", "green", "metrics, tracing", "approved"):
        assert word in summary, summary

    # Each node ran exactly once across four pauses (the checkpoint's own record).
    state = get_checkpointer().get_tuple({"configurable": {"thread_id": run["thread_id"]}})
    trace = state.checkpoint["channel_values"]["trace"]
    assert trace == ["ask_name", "ask_color", "ask_extras", "ask_approval", "summarize"]

    db_run = AgentRun.objects.get(pk=run["id"])
    assert db_run.segments == 5
    assert list(db_run.interrupts.values_list("status", flat=True)) == ["applied"] * 4
    decisions = AuditLog.objects.filter(run=db_run, action="decision")
    assert decisions.count() == 4
    assert all(d.actor_label == "owner" for d in decisions)
    statuses = list(AuditLog.objects.filter(run=db_run, action="run.status")
                    .values_list("to_status", flat=True))
    assert statuses == ["queued"] + ["running", "paused", "resuming"] * 4 + ["running",
                                                                              "completed"]

    # Five AG-UI runs were published: four ending in an interrupt, one in success.
    runs = validate_events(published_events(run["id"]))
    outcomes = [r[-1]["outcome"]["type"] for r in runs]
    assert outcomes == ["interrupt"] * 4 + ["success"]
    first_interrupt = runs[0][-1]["outcome"]["interrupts"][0]
    assert first_interrupt["id"] == AgentInterrupt.objects.filter(run=db_run).first().interrupt_id
    assert first_interrupt["reason"] == "input_required"
    assert first_interrupt["metadata"]["type"] == "input"
    assert first_interrupt["responseSchema"]["required"] == ["value"]
    assert runs[3][-1]["outcome"]["interrupts"][0]["reason"] == "confirmation"
    text = "".join(e["delta"] for e in runs[-1] if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == summary
    assert all(e["messageId"] == run["assistant_message_id"]
               for r in runs for e in r if e["type"].startswith("TEXT_MESSAGE"))
    assert runs[-1][-1]["result"]["status"] == "completed"


def test_rejected_approval_ends_the_run_rejected(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    for payload in ({"value": "X"}, {"value": "red"}, {"values": ["alerts"]}):
        run = answer_and_wait(client, run, payload)
    run = answer_and_wait(client, run, {"approved": False, "reason": "too risky"})
    assert run["status"] == "rejected"
    assert run["error"] == "too risky"
    assert run["result"]["approved"] is False
    assert "rejected (too risky)" in Message.objects.get(pk=run["assistant_message_id"]).content

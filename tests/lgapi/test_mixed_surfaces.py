"""One engine, many doors: a run started with langgraph-sdk is answered in the admin and
over REST while the SDK client follows it (join stream from its last event id, join,
thread state); a run started over REST is resumed from the SDK; RemoteGraph drives a
run to an interrupt and resumes it."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from langgraph.pregel.remote import RemoteGraph
from langgraph.types import Command

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from tests.helpers import start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def _pending(run_id: str) -> AgentInterrupt:
    return AgentInterrupt.objects.get(run_id=run_id, status="pending")


def test_sdk_run_answered_in_the_admin_and_over_rest(lg, api, users):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(tid, "dev", input={"topic": "doors"},
                                    stream_mode=["values", "updates"]))
    run_id = parts[0].data["run_id"]
    last_id = [p.id for p in parts if p.id][-1]
    row = _pending(run_id)
    assert row.request["type"] == "input"

    # The admin queue: a staff reviewer answers the SDK's run.
    reviewer = users["reviewer"]
    reviewer.is_staff = True
    reviewer.save()
    admin = Client()
    admin.force_login(reviewer)
    response = admin.post(f"/admin/hitl/agentinterrupt/{row.pk}/change/", {"value": "Apollo"})
    assert response.status_code == 302, response.content[:500]
    # The SDK client follows the resumed segment from where its stream stopped.
    joined = list(client.runs.join_stream(tid, run_id, last_event_id=last_id,
                                          stream_mode="values"))
    assert joined[0].event == "metadata"
    values = [p.data for p in joined if p.event == "values"]
    assert values[-1]["name"] == "Apollo"
    assert values[-1]["__interrupt__"][0]["value"]["type"] == "select"

    # REST: the owner answers the next one; the SDK sees the run go on (join, state).
    select = _pending(run_id)
    answered = api("owner").post(f"/api/interrupts/{select.pk}/decision/",
                                 json={"payload": {"value": "green"}})
    assert answered.status_code == 202, answered.text
    out = client.runs.join(tid, run_id)
    assert out["__interrupt__"][0]["value"]["type"] == "multiSelect"
    assert client.threads.get_state(tid)["values"]["color"] == "green"

    out = client.runs.wait(tid, "dev", command={"resume": {"values": ["metrics"]}})
    out = client.runs.wait(tid, "dev", command={"resume": {"approved": True}})
    assert out["outcome"] == "completed"
    surfaces = AuditLog.objects.filter(run_id=run_id, action="decision").values_list(
        "surface", flat=True)
    assert list(surfaces) == ["admin", "api", "langgraph", "langgraph"]


def test_rest_run_resumed_from_the_sdk(lg, api):
    rest = api("owner")
    run = wait_run(rest, start_run(rest, "dev")["id"], "paused")
    tid = run["thread_id"]
    client = lg("owner")
    assert client.threads.get(tid)["status"] == "interrupted"
    (question,) = client.threads.get_state(tid)["interrupts"]
    assert question["value"]["type"] == "input"
    parts = list(client.runs.stream(tid, "dev", command={"resume": {"value": "Vega"}},
                                    stream_mode="values"))
    assert parts[0].data["run_id"] == run["id"]
    values = [p.data for p in parts if p.event == "values"]
    assert values[-1]["name"] == "Vega"  # the log has the mode from this segment on
    assert AgentRun.objects.get(pk=run["id"]).stream_modes == ["values"]
    assert wait_run(rest, run["id"], "paused")["pending_interrupts"][0]["kind"] == "select"


def test_remote_graph_invokes_to_an_interrupt_and_resumes(live, users):
    graph = RemoteGraph("dev", url=live["base_url"] + "/lg", api_key=users["owner_token"])
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    out = graph.invoke({"topic": "remote"}, config)
    assert out["__interrupt__"][0]["value"]["type"] == "input"
    out = graph.invoke(Command(resume={"value": "Orion"}), config)
    assert out["name"] == "Orion" and out["__interrupt__"][0]["value"]["type"] == "select"
    assert graph.get_state(config).values["name"] == "Orion"

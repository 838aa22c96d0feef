"""A whole `dev` run through langgraph-sdk's sync client: stream with values, updates and
messages-tuple, the interrupt in the stream and in get_state, resumes over runs.stream
and runs.wait, the same rows and audit as every other door."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, AuditLog

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]


def _parts(stream):
    return [(p.event, p.data) for p in stream]


def test_dev_run_streamed_and_resumed(lg):
    client = lg("owner")
    thread = client.threads.create(metadata={"purpose": "sdk"})
    assert thread["status"] == "idle" and thread["metadata"]["purpose"] == "sdk"
    tid = thread["thread_id"]

    parts = _parts(client.runs.stream(
        tid, "dev", input={"messages": [{"role": "user", "content": "hello"}], "topic": "sdk"},
        stream_mode=["values", "updates", "messages-tuple"]))
    events = [e for e, _ in parts]
    assert events[0] == "metadata"
    run_id = parts[0][1]["run_id"]
    assert {"values", "updates"} <= set(events), events
    interrupted = [d for e, d in parts if e == "updates" and "__interrupt__" in d]
    (question,) = interrupted[-1]["__interrupt__"]
    assert question["value"]["type"] == "input"

    state = client.threads.get_state(tid)
    assert [i["id"] for i in state["interrupts"]] == [question["id"]]
    assert state["tasks"][0]["interrupts"][0]["id"] == question["id"]
    assert state["checkpoint"]["thread_id"] == tid
    assert client.threads.get(tid)["status"] == "interrupted"
    assert tid in [t["thread_id"] for t in client.threads.search(status="interrupted")]
    assert client.runs.get(tid, run_id)["status"] == "interrupted"

    # Resume 1 over runs.stream (a single value answers the one pending interrupt).
    parts = _parts(client.runs.stream(tid, "dev", command={"resume": ANSWERS[0]},
                                      stream_mode=["values", "updates"]))
    assert parts[0] == ("metadata", {"run_id": run_id, "attempt": 1})
    values = [d for e, d in parts if e == "values"]
    assert values and values[-1]["__interrupt__"][0]["value"]["type"] == "select"

    # The same answer again: the interrupt was consumed, nothing pending any more for it.
    # Resumes 2-4 over runs.wait, the last one with a map by interrupt id.
    for answer in ANSWERS[1:3]:
        out = client.runs.wait(tid, "dev", command={"resume": answer})
        assert "__interrupt__" in out
    pending = out["__interrupt__"][0]["id"]
    parts = _parts(client.runs.stream(tid, "dev", command={"resume": {pending: ANSWERS[3]}},
                                      stream_mode=["values", "messages-tuple"]))
    out = [d for e, d in parts if e == "values"][-1]
    assert "__interrupt__" not in out and out["outcome"] == "completed"
    assert out["result"]["name"] == "Apollo"
    said = [d for e, d in parts if e == "messages"]
    assert said and said[-1][0]["type"] == "ai" and "Apollo" in said[-1][0]["content"]
    assert "langgraph_node" in said[-1][1]
    assert client.runs.join(tid, run_id)["result"]["name"] == "Apollo"

    run = AgentRun.objects.get(pk=run_id)
    assert run.status == "completed" and run.stream_modes
    decisions = AuditLog.objects.filter(run=run, action="decision")
    assert decisions.count() == 4 and set(decisions.values_list("surface", flat=True)) == {
        "langgraph"}
    assert client.threads.get(tid)["status"] == "idle"
    assert client.runs.get(tid, run_id)["status"] == "success"
    history = client.threads.get_history(tid, limit=50)
    assert len(history) > 1 and history[0]["checkpoint"]["checkpoint_id"]

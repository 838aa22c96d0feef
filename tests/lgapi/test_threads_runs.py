"""Threads, assistants and run management through langgraph-sdk: create / patch / delete,
search and count, cancel, multitask strategies, stateless runs, run lists, and the
``messages`` stream mode."""

from __future__ import annotations

import uuid

import pytest

from runs.models import AgentRun, AuditLog, Conversation

pytestmark = pytest.mark.django_db(transaction=True)


def test_assistants_and_info(lg):
    client = lg("owner")
    found = client.assistants.search(graph_id="dev")
    assert [a["graph_id"] for a in found] == ["dev"]
    by_name = client.assistants.get("dev")
    assert client.assistants.get(by_name["assistant_id"]) == by_name
    schemas = client.assistants.get_schemas("dev")
    assert schemas["context_schema"]["properties"]["topic"]["type"] == "string"
    assert set(schemas["input_schema"]["properties"]) == {"messages", "topic"}
    assert client.assistants.get_graph("dev")["nodes"]
    assert client.assistants.get_subgraphs("dev") == {}
    assert client.assistants.count() >= 6
    assert "dev" in {a["name"] for a in client.assistants.search(limit=100)}


def test_thread_writes(lg):
    client = lg("owner")
    tid = str(uuid.uuid4())
    made = client.threads.create(thread_id=tid, metadata={"a": 1})
    assert made["thread_id"] == tid and made["status"] == "idle"
    assert client.threads.create(thread_id=tid, if_exists="do_nothing")["metadata"] == {"a": 1}
    patched = client.threads.update(tid, metadata={"b": 2})
    assert patched["metadata"] == {"a": 1, "b": 2}
    assert client.threads.count(metadata={"b": 2}) == 1
    assert [t["thread_id"] for t in client.threads.search(ids=[tid])] == [tid]
    client.threads.delete(tid)
    assert not Conversation.objects.filter(pk=tid).exists()


def test_cancel_multitask_and_stateless_runs(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    first = client.runs.create(tid, "dev", input={"topic": "one"}, metadata={"n": 1})
    assert first["status"] in ("pending", "running")
    assert "__interrupt__" in client.runs.join(tid, first["run_id"])
    assert client.runs.get(tid, first["run_id"])["metadata"] == {"n": 1}
    # A new input on a thread waiting for an answer: refused, unless it may interrupt.
    with pytest.raises(Exception) as busy:
        client.runs.create(tid, "dev", input={"topic": "two"})
    assert busy.value.status_code == 409
    second = client.runs.create(tid, "dev", input={"topic": "two"},
                                multitask_strategy="interrupt")
    assert AgentRun.objects.get(pk=first["run_id"]).status == "cancelled"
    client.runs.join(tid, second["run_id"])
    cancelled = client.runs.cancel(tid, second["run_id"])
    assert cancelled["status"] == "interrupted"
    assert client.threads.get(tid)["status"] == "idle"
    assert [r["run_id"] for r in client.runs.list(tid)] == [second["run_id"], first["run_id"]]
    assert [r["run_id"] for r in client.runs.list(tid, status="interrupted")] == [
        second["run_id"], first["run_id"]]
    with pytest.raises(Exception) as again:
        client.runs.cancel(tid, second["run_id"])
    assert again.value.status_code == 409
    assert AuditLog.objects.filter(run_id=second["run_id"], to_status="cancelled",
                                   surface="langgraph").exists()

    # A stateless run: its own new thread, still the owner's, with its rows and audit.
    out = client.runs.wait(None, "dev", input={"topic": "stateless"})
    assert out["topic"] == "stateless" and "__interrupt__" in out
    assert Conversation.objects.filter(owner__username="owner").count() == 2


def test_messages_mode_streams_partial_then_complete(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(tid, "assistant", input={"messages": [
        {"role": "user", "content": "Where do I download my invoices?"}]},
        stream_mode=["messages", "values"]))
    events = [p.event for p in parts]
    assert "messages/metadata" in events and "messages/partial" in events, events
    final = [p.data for p in parts if p.event == "values"][-1]
    answer = final["result"]["answer"]
    partials = [p.data[0] for p in parts if p.event == "messages/partial"]
    assert any(m["content"] == answer for m in partials)


def test_debug_tasks_and_checkpoints_modes(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(tid, "dev", input={"topic": "modes"},
                                    stream_mode=["debug", "tasks", "checkpoints"]))
    events = {p.event for p in parts}
    assert {"metadata", "debug", "tasks", "checkpoints"} <= events, events
    tasks = [p.data for p in parts if p.event == "tasks"]
    assert all("id" in t and "name" in t for t in tasks)
    assert any(p.data.get("type") == "checkpoint" for p in parts if p.event == "debug")

"""``stream_subgraphs`` through langgraph-sdk: the worker streams the graph with
subgraphs, and a subgraph's parts come out named ``<mode>|<namespace>`` as LangGraph
Server names them; a client that did not ask for them gets the parent's parts only."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_subgraph_parts_carry_their_namespace(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    parts = [(p.event, p.data) for p in client.runs.stream(
        tid, "adopter_subgraph", input={}, stream_mode=["updates", "values"],
        stream_subgraphs=True)]
    inner = [(e, d) for e, d in parts if e.startswith("updates|child:")]
    assert inner and inner[0][1] == {"inner": {"result": {"inner": "ran"}}}, parts
    assert any(e.startswith("values|child:") for e, _ in parts)
    # The parent's own parts as ever: its interrupt in its updates.
    assert any(e == "updates" and "__interrupt__" in d for e, d in parts)
    assert client.threads.get_state(tid)["values"]["result"] == {"inner": "ran"}

    # The resume of a client that does not ask for subgraphs: the parent's parts only
    # (the worker still streams them for the run).
    resumed = [p.event for p in client.runs.stream(
        tid, "adopter_subgraph", command={"resume": "yes"}, stream_mode=["updates"])]
    assert "updates" in resumed and not [e for e in resumed if "|" in e], resumed
    assert client.threads.get_state(tid)["values"]["result"] == {
        "inner": "ran", "received": "yes"}


def test_without_stream_subgraphs_no_namespaced_parts(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    events = [p.event for p in client.runs.stream(
        tid, "adopter_subgraph", input={}, stream_mode=["updates", "values"])]
    assert "updates" in events and not [e for e in events if "|" in e], events

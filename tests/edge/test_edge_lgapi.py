"""langgraph-sdk through Pushpin (the streams held by the proxy: lgapi.hold, and
test_edge_lgapi_held.py): a run streams to its interrupt, is rejoined from its
Last-Event-ID, resumed, waited for and enqueued behind as it is directly."""

from __future__ import annotations

import pytest
from langgraph_sdk import get_sync_client

from runs.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)


def test_sdk_through_pushpin(edge, live, users):
    client = get_sync_client(url=edge["base_url"] + "/lg", api_key=users["owner_token"],
                             timeout=60)
    try:
        tid = client.threads.create()["thread_id"]
        parts = list(client.runs.stream(tid, "dev", input={"topic": "edge"},
                                        stream_mode=["values", "updates"]))
        assert parts[0].event == "metadata"
        run_id = parts[0].data["run_id"]
        assert any(p.event == "updates" and "__interrupt__" in p.data for p in parts)
        # A rejoin from the first part's id: the rest of that segment again.
        rejoined = list(client.runs.join_stream(tid, run_id, last_event_id="1"))
        assert [p.event for p in rejoined if p.event != "metadata"]

        queued = client.runs.create(tid, "dev", input={"topic": "next"},
                                    multitask_strategy="enqueue")
        assert queued["status"] == "pending"
        out = client.runs.wait(tid, "dev", command={"resume": {"value": "Edge"}})
        assert out["name"] == "Edge" and "__interrupt__" in out
        client.runs.cancel(tid, run_id)
        assert client.runs.join(tid, queued["run_id"])["topic"] == "next"
        assert AgentRun.objects.get(pk=queued["run_id"]).status == "paused"
    finally:
        client.http.client.close()

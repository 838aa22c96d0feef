"""Hostile values of the options added last: a join stream's ``Last-Event-ID`` that is not
one of our event ids (a Unicode digit Python's ``isdigit`` takes, more digits than ``int``
converts) and a run's ``webhook`` whose host has a label over 63 bytes. Each is a 2xx or
4xx in the Platform's shape, never a 5xx, and nothing is consumed."""

from __future__ import annotations

import httpx
import pytest

from hitl.models import AgentInterrupt
from runs.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)


def test_bad_last_event_id_and_webhook_host(lg, live, users):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "dev", input={"topic": "hostile"})
    run = AgentRun.objects.get(thread_id=tid)
    join = f"/threads/{tid}/runs/{run.id}/stream"
    with httpx.Client(base_url=live["base_url"] + "/lg", timeout=30,
                      headers={"X-Api-Key": users["owner_token"]}) as http:
        for value in ("\u00b2", "9" * 5000, "-1", "abc", "1" * 40):
            # Read as no id: the run (paused) has nothing more to stream.
            r = http.get(join, headers={"Last-Event-ID": value.encode("latin-1")})
            assert (r.status_code, r.text.split("\n")[0]) == (200, "event: metadata"), value
        r = http.post(f"/threads/{tid}/runs", json={
            "assistant_id": "dev", "input": {"topic": "x"}, "multitask_strategy": "enqueue",
            "webhook": "http://" + "a" * 64 + ".example/"})
        assert r.status_code == 422 and "cannot be reached" in r.json()["detail"], r.text
    assert AgentRun.objects.count() == 1
    assert AgentInterrupt.objects.get(run=run).status == "pending"

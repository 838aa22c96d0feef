"""``on_disconnect``: a stream whose client goes away cancels its run only when the client
asked for it (``cancel``); by default the run goes on without it."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from runs.models import AgentRun, AuditLog

pytestmark = pytest.mark.django_db(transaction=True)


def _leave_early(live, users, on_disconnect: str) -> str:
    """Start a slow_counted run over /runs/stream, read its metadata, hang up."""
    with httpx.Client(base_url=live["base_url"] + "/lg", timeout=30,
                      headers={"X-Api-Key": users["owner_token"]}) as client:
        tid = client.post("/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "slow_counted", "input": {}, "stream_mode": ["values"],
                "on_disconnect": on_disconnect}
        with client.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            for line in response.iter_lines():
                if line.startswith("data:") and "run_id" in line:
                    return json.loads(line[5:])["run_id"]
    raise AssertionError("no metadata event")


def _settled(run_id: str, statuses: set[str]) -> str:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status = AgentRun.objects.get(pk=run_id).status
        if status in statuses:
            return status
        time.sleep(0.05)
    return AgentRun.objects.get(pk=run_id).status


def test_cancel_on_disconnect(live, users):
    run_id = _leave_early(live, users, "cancel")
    assert _settled(run_id, {"cancelled", "paused"}) == "cancelled"
    cancel = AuditLog.objects.get(run_id=run_id, to_status="cancelled")
    assert (cancel.actor_label, cancel.surface) == ("owner", "langgraph")


def test_continue_on_disconnect(live, users):
    run_id = _leave_early(live, users, "continue")
    assert _settled(run_id, {"cancelled", "paused"}) == "paused"


def test_a_dropped_stream_resumes_after_its_last_event_id(live, users):
    """What the SDKs do on a drop: GET the answer's Location with Last-Event-ID; the rest
    of the segment comes, nothing twice."""
    with httpx.Client(base_url=live["base_url"] + "/lg", timeout=30,
                      headers={"X-Api-Key": users["owner_token"]}) as client:
        tid = client.post("/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "slow_counted", "input": {}, "stream_mode": ["values"]}
        with client.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            location = response.headers["Location"]
            first = None
            for line in response.iter_lines():
                if line.startswith("id: "):
                    first = int(line[4:])
                    break
        assert first is not None and location.startswith(f"/threads/{tid}/runs/")
        ids, values = [], []
        with client.stream("GET", location,
                           headers={"Last-Event-ID": str(first)}) as response:
            for line in response.iter_lines():
                if line.startswith("id: "):
                    ids.append(int(line[4:]))
                elif line.startswith("data: ") and ids:
                    values.append(json.loads(line[6:]))
    assert ids and min(ids) > first and len(ids) == len(set(ids))
    assert values[-1]["__interrupt__"][0]["value"]["type"] == "input"

"""``runs.join_stream`` as the SDK calls it by default (``stream_mode=`` empty: the run's
own modes), and with ``cancel_on_disconnect``."""

from __future__ import annotations

import time

import pytest

from runs.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)


def test_join_stream_without_modes_streams_the_runs_own(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "dev", input={"topic": "join"},
                             stream_mode=["values", "updates"])
    parts = list(client.runs.join_stream(tid, run["run_id"], last_event_id="0"))
    events = {p.event for p in parts}
    assert parts[0].event == "metadata" and {"values", "updates"} <= events, events


def test_join_stream_cancel_on_disconnect(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    first = client.runs.create(tid, "dev", input={"topic": "one"})
    client.runs.join(tid, first["run_id"])
    # A run waiting behind the paused first one: joined, its client goes before it ran.
    second = client.runs.create(tid, "dev", input={"topic": "two"},
                                multitask_strategy="enqueue")
    stream = client.runs.join_stream(tid, second["run_id"], stream_mode="values",
                                     cancel_on_disconnect=True)
    assert next(stream).event == "metadata"
    stream.close()
    deadline = time.monotonic() + 20
    while AgentRun.objects.get(pk=second["run_id"]).status != "cancelled":
        assert time.monotonic() < deadline, AgentRun.objects.get(pk=second["run_id"]).status
        time.sleep(0.05)
    assert AgentRun.objects.get(pk=first["run_id"]).status == "paused"

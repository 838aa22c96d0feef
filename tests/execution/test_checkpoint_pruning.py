"""An ended run's thread keeps only its latest checkpoints (execution.checkpoint_pruning),
on the real checkpointer and database; what a later run or AG-UI connect reads stays."""

from __future__ import annotations

import time
from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone
from langgraph.checkpoint.postgres import PostgresSaver

from execution import checkpoint_pruning, graphs
from runs.models import AgentRun
from tests.agui_client import interrupts, post_events, resume, run_input, run_segment
from tests.agui_rules import validate_events
from tests.helpers import answer_and_wait, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERS = [{"value": "Vega"}, {"value": "blue"}, {"values": ["alerts"]}, {"approved": True}]


def _rows(thread_id: str) -> dict[str, int]:
    with connection.cursor() as cur:
        counts = {}
        for table in ("checkpoints", "checkpoint_writes", "checkpoint_blobs"):
            cur.execute(f"SELECT count(*) FROM {table} WHERE thread_id = %s", [thread_id])
            counts[table] = cur.fetchone()[0]
    return counts


def _state(thread_id: str) -> tuple[dict, tuple, list]:
    snapshot = graphs.compiled("dev").get_state({"configurable": {"thread_id": thread_id}})
    return (snapshot.values, snapshot.next,
            [i.id for task in snapshot.tasks for i in task.interrupts])


def _complete(client, **body) -> dict:
    run = wait_run(client, start_run(client, **body)["id"], "paused")
    for payload in ANSWERS:
        run = answer_and_wait(client, run, payload)
    assert run["status"] == "completed", run
    return run


def test_an_ended_runs_thread_keeps_only_its_latest_checkpoint(api, settings):
    client = api("owner")
    run = _complete(client, input={"topic": "prune"})
    thread = run["thread_id"]
    history, state = _rows(thread), _state(thread)
    assert history["checkpoints"] > 1 and history["checkpoint_writes"] > 0

    # Just ended: left for CHECKPOINT_PRUNE_AFTER_SECONDS (a live segment may still write).
    assert checkpoint_pruning.sweep()["runs"] == 0
    # CHECKPOINT_HISTORY=all keeps everything.
    settings.AGENTSITE_CHECKPOINT_HISTORY = "all"
    assert checkpoint_pruning.sweep(older_than=0)["runs"] == 0
    assert _rows(thread) == history
    settings.AGENTSITE_CHECKPOINT_HISTORY = "latest"

    assert checkpoint_pruning.sweep(older_than=0) == {
        "runs": 1, "threads_pruned": 1, "threads_busy": 0, "threads_kept": 0}
    pruned = _rows(thread)
    assert pruned["checkpoints"] == 1 and pruned["checkpoint_writes"] == 0
    assert 0 < pruned["checkpoint_blobs"] < history["checkpoint_blobs"]
    assert _state(thread) == state  # what connect and a later run read
    assert AgentRun.objects.get(pk=run["id"]).checkpoints_pruned
    assert checkpoint_pruning.sweep(older_than=0)["runs"] == 0  # seen to once

    # The thread goes on from its latest checkpoint: the next run's state carries the
    # first run's messages on.
    _complete(client, thread_id=thread)
    messages = _state(thread)[0]["messages"]
    assert len(messages) > len(state[0]["messages"])
    assert [m.id for m in messages[:len(state[0]["messages"])]] == [
        m.id for m in state[0]["messages"]]


def test_a_thread_whose_next_run_is_active_is_left_to_that_runs_end(api):
    client = api("owner")
    first = _complete(client)
    thread = first["thread_id"]
    second = wait_run(client, start_run(client, thread_id=thread)["id"], "paused")
    rows, state = _rows(thread), _state(thread)
    assert state[2], "the second run waits on a question"

    assert checkpoint_pruning.sweep(older_than=0) == {
        "runs": 1, "threads_pruned": 0, "threads_busy": 1, "threads_kept": 0}
    assert _rows(thread) == rows  # the paused run's checkpoint and pending writes stay
    assert AgentRun.objects.get(pk=first["id"]).checkpoints_pruned

    # The paused run still resumes where it stopped; its own end prunes the thread.
    answer_and_wait(client, second, {"value": "Vega"})
    assert client.post(f"/api/runs/{second['id']}/cancel/").status_code == 200
    before = _state(thread)
    assert checkpoint_pruning.sweep(older_than=0)["threads_pruned"] == 1
    assert _rows(thread)["checkpoints"] == 1
    assert _state(thread) == before


def test_beat_sends_the_sweep_and_the_worker_prunes(api):
    """The real path: Celery beat → the worker's task, for a run ended long enough ago
    (the suite's beat sweeps every second, for runs ended over an hour ago)."""
    client = api("owner")
    run = _complete(client)
    thread, state = run["thread_id"], _state(run["thread_id"])
    assert _rows(thread)["checkpoints"] > 1
    AgentRun.objects.filter(pk=run["id"]).update(
        finished_at=timezone.now() - timedelta(hours=2))
    deadline = time.monotonic() + 15
    while not AgentRun.objects.get(pk=run["id"]).checkpoints_pruned:
        assert time.monotonic() < deadline, "beat's sweep did not prune the thread"
        time.sleep(0.2)
    assert _rows(thread)["checkpoints"] == 1
    assert _state(thread) == state


class FailingSaver(PostgresSaver):
    """The real saver whose prune fails as LangGraph's can (Postgres gone, a bad thread)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(conn=None)  # type: ignore[arg-type]  # prune is all the sweep calls
        self.error = error

    def prune(self, thread_ids, *, strategy="keep_latest"):  # noqa: ANN001, ANN201, ARG002
        raise self.error


def test_a_failing_prune_stops_the_sweep_or_keeps_that_thread(api):
    client = api("owner")
    run = _complete(client)
    thread, rows = run["thread_id"], _rows(run["thread_id"])

    unreachable = FailingSaver(psycopg.OperationalError("connection refused"))
    with pytest.raises(psycopg.OperationalError):
        checkpoint_pruning.sweep(older_than=0, saver=unreachable)
    assert not AgentRun.objects.get(pk=run["id"]).checkpoints_pruned  # tried again later

    broken = FailingSaver(ValueError("a thread LangGraph cannot prune"))
    assert checkpoint_pruning.sweep(older_than=0, saver=broken) == {
        "runs": 1, "threads_pruned": 0, "threads_busy": 0, "threads_kept": 1}
    assert AgentRun.objects.get(pk=run["id"]).checkpoints_pruned  # the queue moves on
    assert _rows(thread) == rows


def test_agui_connect_rebuilds_a_pruned_thread(api):
    """What a client that comes back sees of a finished AG-UI thread is the same after
    its history was pruned (owner and reviewer; the outsider still gets a 404)."""
    client = api("owner")
    body = run_input(forwardedProps={"input": {"topic": "pruned"}})
    thread = body["threadId"]
    run = run_segment(client, "dev", body)
    for payload in ANSWERS:
        run = run_segment(client, "dev", resume(thread, interrupts(run)[0]["id"], payload))
    assert run[-1]["outcome"]["type"] == "success"

    def rebuilt(who: str) -> list[dict]:
        (events,) = validate_events(post_events(api(who), "/agui/dev/connect/",
                                                {"threadId": thread, "runId": "r-1"}))
        return [{k: v for k, v in e.items() if k != "timestamp"} for e in events]

    before = {who: rebuilt(who) for who in ("owner", "reviewer")}
    graph_thread = AgentRun.objects.get().thread_id  # the client's id, mapped per user
    assert _rows(graph_thread)["checkpoints"] > 1
    assert checkpoint_pruning.sweep(older_than=0)["threads_pruned"] == 1
    assert _rows(graph_thread)["checkpoints"] == 1
    for who in ("owner", "reviewer"):
        after = rebuilt(who)
        assert after == before[who]
        assert after[2]["snapshot"]["topic"] == "pruned"
        assert after[2]["snapshot"]["name"] == "Vega"
    r = api("outsider").post("/agui/dev/connect/", json={"threadId": thread})
    assert r.status_code == 404

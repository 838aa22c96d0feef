"""Connect / refresh recovery: POST /agui/<agent>/connect/ rebuilds a thread from the
checkpoint and the business tables (the Redis event store may be gone), or joins a
live run; only the owner or a reviewer may connect."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from runs.models import AgentRun
from streams.keys import counter_key, event_key, run_channel
from tests.agui_client import interrupts, post_events, resume, run_input, run_segment
from tests.agui_rules import validate_events
from tests.worker_idle import open_streams, until, wait_worker_acked

pytestmark = pytest.mark.django_db(transaction=True)


def _empty_event_store(run_id: str) -> None:
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    channel = run_channel(run_id)
    stored = f"{event_key(channel, 0)[:-1]}*"  # every stored event of the channel
    keys = list(r.scan_iter(stored)) + [counter_key(channel)]
    r.delete(*keys)
    assert not list(r.scan_iter(stored))


def test_refresh_recovery_after_event_store_emptied(api):
    client = api("owner")
    body = run_input(forwardedProps={"input": {"topic": "refresh"}},
                     messages=[{"id": "m1", "role": "user", "content": "make it"}])
    thread = body["threadId"]
    run = run_segment(client, "dev", body)
    run = run_segment(client, "dev", resume(thread, interrupts(run)[0]["id"], {"value": "Vega"}))
    (pending,) = interrupts(run)
    run_id = str(AgentRun.objects.get(thread_id=thread).id)
    _empty_event_store(run_id)

    events = post_events(client, "/agui/dev/connect/", {"threadId": thread, "runId": "r-1"})
    (rebuilt,) = validate_events(events)
    assert [e["type"] for e in rebuilt] == ["RUN_STARTED", "MESSAGES_SNAPSHOT",
                                            "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert rebuilt[0]["threadId"] == thread and rebuilt[0]["runId"] == "r-1"
    messages = rebuilt[1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == "make it"
    state = rebuilt[2]["snapshot"]
    assert state["topic"] == "refresh" and state["name"] == "Vega"
    assert state["trace"] == ["ask_name"]
    (again,) = interrupts(rebuilt)
    assert again == pending  # same id, reason, message, metadata, schema

    # Resuming from the rebuilt state completes the run.
    run = run_segment(client, "dev", resume(thread, again["id"], {"value": "blue"}))
    for payload in ({"values": ["alerts"]}, {"approved": True}):
        run = run_segment(client, "dev", resume(thread, interrupts(run)[0]["id"], payload))
    assert run[-1]["outcome"]["type"] == "success"
    assert run[-1]["result"]["result"] == {"name": "Vega", "color": "blue", "extras": ["alerts"],
                                           "approved": True, "reason": ""}

    # And a connect after the end rebuilds the finished thread.
    _empty_event_store(run_id)
    (done,) = validate_events(post_events(client, "/agui/dev/connect/", {"threadId": thread}))
    assert done[-1]["outcome"]["type"] == "success"
    assert done[-1]["result"]["status"] == "completed"
    assert "Vega" in done[1]["messages"][-1]["content"]
    assert done[2]["snapshot"]["outcome"] == "completed"


def test_reviewer_may_connect_outsider_may_not(api):
    owner = api("owner")
    body = run_input()
    (pending,) = interrupts(run_segment(owner, "dev", body))
    (rebuilt,) = validate_events(post_events(api("reviewer"), "/agui/dev/connect/",
                                             {"threadId": body["threadId"]}))
    assert interrupts(rebuilt)[0]["id"] == pending["id"]
    r = api("outsider").post("/agui/dev/connect/", json={"threadId": body["threadId"]})
    assert r.status_code == 404 and r.json()["code"] == "unknown_thread"
    assert "data:" not in r.text
    # Unknown thread: the same answer.
    r = owner.post("/agui/dev/connect/", json={"threadId": "never-used"})
    assert r.status_code == 404


def test_connect_joins_a_live_run(api, live):
    """While a segment runs, connect replays it from its RUN_STARTED and follows it live."""
    client = api("owner")
    body = run_input()
    thread = body["threadId"]
    run = run_segment(client, "dev", body)
    for payload in ({"value": "Live"}, {"value": "red"}, {"values": ["logging"]}):
        run = run_segment(client, "dev", resume(thread, interrupts(run)[0]["id"], payload))
    approval = interrupts(run)[0]["id"]

    # Stop the worker so the resumed segment waits: connect must wait for it, then follow.
    # First let the worker acknowledge the task that just paused the run, so the stop
    # requeues nothing of the finished segment.
    wait_worker_acked()
    worker = live["worker"]
    worker.stop()
    got: dict = {}

    def read(key: str, path: str, body: dict) -> None:
        got[key] = post_events(api("owner"), path, body)

    metrics = api("reviewer")
    before = open_streams(metrics, "agui")
    readers = [threading.Thread(target=read, args=(
        "resumed", "/agui/dev/", resume(thread, approval, {"approved": True})))]
    readers[0].start()
    try:
        until(lambda: AgentRun.objects.get(thread_id=thread).status == "resuming",
              "the run resuming")
        readers.append(threading.Thread(target=read, args=(
            "joined", "/agui/dev/connect/", {"threadId": thread, "runId": "c-1"})))
        readers[1].start()
        # Both streams open (the connect follows the waiting run) before the worker is back.
        until(lambda: open_streams(metrics, "agui") >= before + 2, "both streams open")
    finally:
        worker.start()
    for reader in readers:
        reader.join(30)
        assert not reader.is_alive()
    (resumed,) = validate_events(got["resumed"])
    (joined,) = validate_events(got["joined"])
    assert joined[0]["runId"] == "c-1" and joined[-1]["runId"] == "c-1"
    assert joined[-1]["outcome"]["type"] == "success"
    assert [e["type"] for e in joined] == [e["type"] for e in resumed]
    assert any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in joined)


def test_open_streams_hold_no_database_connection(api, live):
    """Ten AG-UI streams open on a waiting run: the database sees no more connections than
    before they opened (each stream gave its connection back before streaming). The
    worker is stopped below, so the run waits."""
    import contextlib
    import json

    from django.db import connection

    client = api("owner")
    body = run_input()
    thread = body["threadId"]
    (pending,) = interrupts(run_segment(client, "dev", body))
    wait_worker_acked()  # before the worker is stopped (see above)
    worker = live["worker"]
    worker.stop()

    def db_connections() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                           "current_database()")
            return cursor.fetchone()[0]

    with contextlib.ExitStack() as streams:
        try:
            opened = [streams.enter_context(client.stream(
                "POST", "/agui/dev/", json=resume(thread, pending["id"], {"value": "Pooled"})))]
            before = db_connections()
            # One after the other (headers received = the stream's DB work is over), so the
            # web process's pool has no reason to grow.
            for _ in range(10):
                opened.append(streams.enter_context(api("owner").stream(
                    "POST", "/agui/dev/connect/", json={"threadId": thread})))
            time.sleep(0.5)
            during = db_connections()
            assert during <= before, (before, during)
        finally:
            worker.start()
        for response in opened:
            assert response.status_code == 200
            events = [json.loads(line[6:]) for line in response.iter_lines()
                      if line.startswith("data: ")]
            (run,) = validate_events(events)
            assert interrupts(run)[0]["metadata"]["type"] == "select"


def test_connect_mid_segment_replays_from_its_start(api):
    """A segment already under way: connect replays it from its RUN_STARTED, then follows."""
    from agui import events as agui
    from streams.publish import publish

    client = api("owner")
    body = run_input()
    thread = body["threadId"]
    interrupts(run_segment(client, "dev", body))
    db_run = AgentRun.objects.get(thread_id=thread)
    ids = {"thread_id": thread, "run_id": str(db_run.id)}
    # Stand in for a worker in the middle of a segment: the run is "running" on a live
    # lease (a lapsed or missing one is the suite worker's reaper's to take over, whose
    # takeover ended the AG-UI run under load), and its events are fenced by that lease.
    lease = f"test/{uuid.uuid4().hex}"
    AgentRun.objects.filter(pk=db_run.pk).update(
        status="running", lease_owner=lease,
        lease_expires_at=timezone.now() + timedelta(minutes=10))
    try:
        from ag_ui.core import StepFinishedEvent, StepStartedEvent

        publish(db_run.id, [agui.run_started(**ids), StepStartedEvent(step_name="ask_color")],
                fence=("claim", lease))
        got: dict = {}
        reader = threading.Thread(target=lambda: got.setdefault("events", post_events(
            api("owner"), "/agui/dev/connect/", {"threadId": thread, "runId": "mid"})))
        reader.start()
        time.sleep(0.5)
        publish(db_run.id, [StepFinishedEvent(step_name="ask_color"),
                            agui.run_finished_success(**ids, result={"status": "x"})],
                fence=("check", lease))
        reader.join(30)
        assert not reader.is_alive()
    finally:
        AgentRun.objects.filter(pk=db_run.pk).update(status="paused", lease_owner="",
                                                     lease_expires_at=None)
    (joined,) = validate_events(got["events"])
    assert [e["type"] for e in joined] == ["RUN_STARTED", "STEP_STARTED", "STEP_FINISHED",
                                           "RUN_FINISHED"]
    assert joined[0]["runId"] == "mid" and joined[-1]["runId"] == "mid"

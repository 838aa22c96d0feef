"""What a client's open stream shows when a run pauses or finishes while Redis is down.

Nothing the worker publishes in an outage is stored, so those events are lost for good;
the streams' watchdog (agui.relay.RunWatch) finds the run's true state in the database
and sends it: the browser's SSE stream (/api/runs/<id>/events/) gets the run's end as
RUN_FINISHED, and an AG-UI client gets RUN_FINISHED(interrupt) with the run's open
interrupts, never RUN_ERROR events_lost for a run that is waiting for its answer.

Each test has its own Redis and its own web and worker processes on it
(tests/faults/cluster.py), and the quiet_outage agent, whose steps touch no Redis.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import pytest
import redis
from django.conf import settings

from hitl.models import AgentInterrupt
from runs.models import AgentRun, Message
from streams.keys import counter_key, event_key, run_channel
from tests.agui_client import interrupts, post_events, resume, run_input, run_segment
from tests.agui_rules import validate_events
from tests.faults.cluster import client, cluster_fixture, wait_all
from tests.faults.test_embedded_restart import _embedded
from tests.faults.test_redis_restart import _kill_redis
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)
cluster = pytest.fixture(name="cluster")(cluster_fixture)

MODULES = ",".join([*settings.AGENTSITE_AGENT_MODULES, "tests.agent_catalog",
                    "tests.faults.outage_catalog"])


def _start(cluster, tmp_path) -> tuple[Any, str, Any]:
    """Own Redis, a supervised worker and a web process: (cluster, Redis URL, data dir)."""
    data_dir = tmp_path / "redis-data"
    url = _embedded(data_dir, "print(e.ensure_redis())")
    # Streams check their run after 1 s without an event (then 2 s, 4 s, up to 6 s), not
    # 5 s (up to 30 s): what they are told is the same, sooner.
    c = cluster(redis_url=url, SECRET_KEY="faults-test-key", AGENTSITE_AGENT_MODULES=MODULES,
                OUTAGE_STEP_SECONDS="3", STREAM_WATCH_SECONDS="1")
    c.worker(supervised=True)
    return c, url, data_dir


def _status(run_id: object) -> str:
    return AgentRun.objects.get(pk=run_id).status


def _stored_types(url: str, run_id: object) -> list[str]:
    """The types of the run's events the store holds (after the outage)."""
    r = redis.Redis.from_url(url)
    channel = run_channel(run_id)
    top = int(r.get(counter_key(channel)) or 0)
    raws = r.mget([event_key(channel, i) for i in range(1, top + 1)]) if top else []
    return [json.loads(json.loads(raw)["data"])["type"] for raw in raws if raw]


def _number(event_id: str) -> float:
    """What static/agentsite/events.js compares: the number after the channel."""
    return float(event_id.rsplit(":", 1)[1])


class Collector(threading.Thread):
    """Reads an SSE stream into ``events`` (``(id, json)``) until ``done(events)``."""

    def __init__(self, api, path: str, done, headers: dict[str, str] | None = None) -> None:
        super().__init__(daemon=True)
        self.api, self.path, self.done, self.headers = api, path, done, headers
        self.events: list[tuple[str, dict]] = []
        self.error: BaseException | None = None
        self.status: int | None = None

    def run(self) -> None:
        try:
            with SseStream(self.api, self.path, headers=self.headers) as stream:
                self.status = stream.status
                while not self.done(self.events):
                    got = stream.next()
                    self.events.append((got.id, got.json()))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def types(self) -> list[str]:
        return [e["type"] for _, e in self.events]


def _finished_success(events: list[tuple[str, dict]]) -> bool:
    return any(e["type"] == "RUN_FINISHED" and (e.get("outcome") or {}).get("type") == "success"
               for _, e in events)


def test_sse_stream_gets_the_end_of_a_run_that_finished_in_a_redis_outage(
        cluster, users, tmp_path):
    c, url, data_dir = _start(cluster, tmp_path)
    try:
        _web, base = c.web()
        api = client(base, users["owner_token"])
        run_id = api.post("/api/runs/", json={"agent": "quiet_outage"}).json()["id"]
        wait_all(lambda: _status(run_id) == "paused", 30)
        (question,) = AgentInterrupt.objects.filter(run_id=run_id)

        page = Collector(api, f"/api/runs/{run_id}/events/", _finished_success)
        page.start()
        wait_all(lambda: "RUN_FINISHED" in page.types() or page.error, 20)
        r = api.post(f"/api/runs/{run_id}/resume/", json={
            "interrupt_id": question.interrupt_id, "payload": {"value": "Zed"}})
        assert r.status_code == 202, r.text
        wait_all(lambda: _status(run_id) == "running", 20)

        _kill_redis(data_dir)  # mid-step: the run finishes in the outage
        wait_all(lambda: _status(run_id) == "completed", 30)
        time.sleep(1)
        assert _embedded(data_dir, "print(e.ensure_redis())") == url

        # The finish was published while Redis was down: the store never had it.
        assert _stored_types(url, run_id).count("RUN_FINISHED") == 1
        page.join(60)
        assert page.error is None, repr(page.error)
        assert _finished_success(page.events), page.types()

        run = AgentRun.objects.get(pk=run_id)
        ids = [event_id for event_id, _ in page.events]
        events = [e for _, e in page.events]
        # The whole stream is AG-UI runs that follow the rules: the lost segment's open
        # message and step are closed before its (true) end.
        first, second = validate_events(events)
        assert first[-1]["outcome"]["interrupts"][0]["id"] == question.interrupt_id
        end = second[-1]
        assert end["result"] == {"status": "completed", "result": {"name": "Zed"}}
        assert end["runId"] == str(run.id) and end["threadId"] == run.thread_id
        (snapshot,) = [e for e in second if e["type"] == "MESSAGES_SNAPSHOT"]
        assistant = Message.objects.get(pk=run.assistant_message_id)
        assert assistant.content.endswith("Named it Zed.")
        assert {"id": str(assistant.id), "role": "assistant", "content": assistant.content} in [
            {k: m.get(k) for k in ("id", "role", "content")} for m in snapshot["messages"]]
        # Ids grow as events.js compares them (made events sit after the last stored
        # one), so a page keeps every one of them.
        numbers = [_number(i) for i in ids]
        assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), ids
        made = ids[-1]
        assert "." in made.rsplit(":", 1)[1], ids

        # A page reconnecting after the made events (Last-Event-ID) is served, from the
        # stored event before them, and is told the true end too.
        again = Collector(api, f"/api/runs/{run_id}/events/", _finished_success,
                          headers={"Last-Event-ID": made})
        again.start()
        again.join(60)
        assert again.status == 200 and again.error is None, (again.status, again.error)
        assert again.events[-1][1]["result"] == end["result"]
        assert all(_number(i) > int(_number(made)) for i, _ in again.events)
    finally:
        c.stop()  # before its Redis: a worker whose broker is gone stops slowly
        _embedded(data_dir, "e.stop_redis()")


def test_agui_run_paused_in_a_redis_outage_ends_with_its_interrupts(cluster, users, tmp_path):
    c, url, data_dir = _start(cluster, tmp_path)
    try:
        _web, base = c.web()
        api = client(base, users["owner_token"])
        thread = str(uuid.uuid4())
        body = run_input(thread)
        got: dict[str, Any] = {}

        def relay() -> None:
            try:
                got["events"] = post_events(api, "/agui/quiet_outage/", body)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                got["error"] = exc

        stream = threading.Thread(target=relay, daemon=True)
        stream.start()
        run = wait_all(lambda: AgentRun.objects.filter(conversation_id=thread,
                                                       status="running").first(), 30)

        _kill_redis(data_dir)  # mid-step: the run pauses in the outage
        wait_all(lambda: _status(run.id) == "paused", 30)
        # With Redis still down, the client is told the truth from the database.
        stream.join(45)
        assert not stream.is_alive(), "the AG-UI stream did not end"
        assert "error" not in got, repr(got.get("error"))
        events = got["events"]
        assert "RUN_ERROR" not in [e["type"] for e in events], events[-1]
        (segment,) = validate_events(events)
        assert segment[0]["threadId"] == segment[-1]["threadId"] == thread
        assert segment[0]["runId"] == segment[-1]["runId"] == body["runId"]
        pending = list(AgentInterrupt.objects.filter(run_id=run.id, status="pending")
                       .values_list("interrupt_id", flat=True))
        told = interrupts(segment)
        assert [i["id"] for i in told] == pending and len(pending) == 1

        assert _embedded(data_dir, "print(e.ensure_redis())") == url
        # The same interrupts as a connect (built from the database) gives ...
        connect = post_events(api, "/agui/quiet_outage/connect/",
                              {"threadId": thread, "runId": body["runId"]})
        assert interrupts(connect) == told
        # ... and answering them goes on with the run: it was waiting, not lost.
        after = run_segment(api, "quiet_outage", resume(thread, told[0]["id"], {"value": "Ada"}))
        assert after[-1]["outcome"]["type"] == "success"
        assert after[-1]["result"] == {"status": "completed", "result": {"name": "Ada"}}
    finally:
        c.stop()  # before its Redis: a worker whose broker is gone stops slowly
        _embedded(data_dir, "e.stop_redis()")

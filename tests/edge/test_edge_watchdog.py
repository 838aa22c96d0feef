"""A held run stream learns the run's true state when its end was never stored.

A segment that ends while Redis is down publishes its end into nothing: the store, and so
every stream, still shows the AG-UI run open. A direct stream's watchdog finds the truth
in the database (tests/faults/test_redis_outage_streams.py); a stream held by Pushpin
gets the same from the web process when the proxy asks its next link (streams.grip's
``_watchdog``): on a second disagreeing check in a row, STREAM_WATCH_SECONDS after the first,
the answer carries the run's true state with ids ``<channel>:<n>.<k>``, once.

The lost end is made here by changing the run in the database without publishing, as
the outage leaves it; Pushpin's own control API (``POST /recover``) makes every held
stream ask its next link now, as the periodic check (the hold's timeout) would later.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
import pytest
from django.utils import timezone

from agui.events import run_started, text_content, text_start
from runs.models import AgentRun
from streams.publish import publish, wait_published
from tests.edge.conftest import WATCH_SECONDS
from tests.edge.sse_many import Stream
from tests.edge.test_edge_topology import Streams, wait_for
from tests.retry_rows import retrying_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agui_unchecked]


def _types(stream: Stream) -> list[str]:
    return [json.loads(d)["type"] for d in stream.datas]


@dataclass
class Recording(Stream):
    """The stream client of tests/edge, keeping every event's id and data too."""

    ids: list[str] = field(default_factory=list)
    datas: list[str] = field(default_factory=list)

    def _event(self, block: str, now: float, stamp: bool) -> None:
        super()._event(block, now, stamp)
        lines = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
        if lines.get("event", "message") == "message" and "id" in lines:
            self.ids.append(lines["id"])
            self.datas.append(lines["data"])


def test_a_held_stream_gets_the_true_state_of_a_run_whose_end_was_lost(edge, live, users):
    run = retrying_run(users["owner"], in_seconds=600)  # live: left alone by the sweeps
    message = "lost-end"
    publish(run.id, [run_started(thread_id=run.thread_id, run_id=str(run.id)),
                     text_start(message), text_content(message, "partial")])
    wait_published()
    channel = f"run-{run.id}"
    path = f"/api/runs/{run.id}/events/"
    held = Streams()
    # The owner's stream opened while the run is live; the reviewer's opens after its end.
    before = Recording(edge["port"], path, users["owner_token"], reconnect=False,
                       head_timeout=60)
    try:
        held.open([before])
        wait_for(lambda: len(before.ids) == 3, what="the stored events")
        assert before.ids == [f"{channel}:{n}" for n in (1, 2, 3)]

        # The segment ended while Redis was down: in the database only.
        AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.COMPLETED,
                                                  finished_at=timezone.now(), retry_at=None)
        after = Recording(edge["port"], path, users["reviewer_token"], reconnect=False,
                          head_timeout=60)
        held.open([after])
        control = urlsplit(edge["env"]["GRIP_URL"])
        httpx.post(f"{control.scheme}://{control.netloc}/recover", timeout=5).raise_for_status()

        for stream in (before, after):
            wait_for(lambda s=stream: "RUN_FINISHED" in _types(s), timeout=30,
                     what="the run's true state", state=lambda s=stream: str(s.ids))
            told = _types(stream)[3:]
            # The open text message closed, then the run's end as the database has it.
            assert told[0] == "TEXT_MESSAGE_END" and told[-1] == "RUN_FINISHED", told
            assert json.loads(stream.datas[-1]).get("outcome", {}).get("type",
                                                                      "success") == "success"
            assert stream.ids[3:] == [f"{channel}:3.{k:03d}" for k in range(1, len(told) + 1)]

        # Told once: later checks at the same id send nothing more.
        counts = (len(before.ids), len(after.ids))
        httpx.post(f"{control.scheme}://{control.netloc}/recover", timeout=5).raise_for_status()
        time.sleep(2 * float(WATCH_SECONDS) + 2)  # longer than a confirmation would take
        assert (len(before.ids), len(after.ids)) == counts
        assert before.status == after.status == 200 and before.stalls == after.stalls == 0
    finally:
        held.close()


def test_held_streams_are_watched_as_often_as_direct_ones(edge, live, users):
    """Without the proxy being told to recover: a held stream learns a lost end within the
    direct stream's watchdog time (6 x STREAM_WATCH_SECONDS, then one confirmation), the
    one opened after the end, on a channel the proxy already holds, included; not at the
    periodic access check."""
    run = retrying_run(users["owner"], in_seconds=600)
    message = "lost-end-watched"
    publish(run.id, [run_started(thread_id=run.thread_id, run_id=str(run.id)),
                     text_start(message), text_content(message, "partial")])
    wait_published()
    path = f"/api/runs/{run.id}/events/"
    held = Streams()
    before = Recording(edge["port"], path, users["owner_token"], reconnect=False,
                       head_timeout=60)
    try:
        held.open([before])
        wait_for(lambda: len(before.ids) == 3, what="the stored events")
        time.sleep(2)  # the proxy's first look at a new hold (1 s after) sees the run live
        AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.COMPLETED,
                                                  finished_at=timezone.now(), retry_at=None)
        # Another user: its own next link (the proxy shares one link's checks).
        after = Recording(edge["port"], path, users["reviewer_token"], reconnect=False,
                          head_timeout=60)
        held.open([after])
        watched = 8 * float(WATCH_SECONDS) + 10  # a look, its confirmation, and load
        for stream in (before, after):
            wait_for(lambda s=stream: "RUN_FINISHED" in _types(s), timeout=watched,
                     what="the run's true state", state=lambda s=stream: str(s.ids))
            assert _types(stream)[-1] == "RUN_FINISHED"
    finally:
        held.close()

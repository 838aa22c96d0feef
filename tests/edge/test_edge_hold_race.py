"""Streams opened through Pushpin while events are being published get every event, promptly.

A stream request is answered by a web process with the stored events and a hold whose
``prev-id`` is the last of them; an event stored after that read but published to Pushpin
before the hold was registered reaches no subscriber. Nothing else is published on the
channel afterwards (a paused run), so only the proxy's catch-up can bring it: the hold's
first timeout (STREAM_WATCH_SECONDS after the open), and Pushpin 1.36 asks the next link 1 s
after a channel is first subscribed (``SUBSCRIBED_DELAY``), and at once when a new hold's
``prev-id`` is not the channel's last published id (docs/scaling.md, "Known issues").

A run with more stored events than one answer carries (django-eventstream's 100) is sent
in full: the proxy follows such an answer's link at once and without ``Grip-Last``, so the
link itself says where to go on (it used to resume from "now" and skip the rest).
"""

from __future__ import annotations

import random
import time

import pytest
from ag_ui.core import CustomEvent

from streams.publish import publish
from tests.edge.sse_many import Stream
from tests.edge.test_edge_topology import Streams, wait_for
from tests.helpers import published_events, start_run, wait_run

# CUSTOM events are published by hand after the runs' RUN_FINISHED (paused).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agui_unchecked]

# Far below the proxy's periodic check (120 s): an event missed at open arrives by the
# hold's own catch-up, not by the recheck.
PROMPT = 10.0


def _stream(edge, run: str, token: str) -> Stream:
    # No re-request: a request the proxy leaves unanswered is a failure here.
    return Stream(edge["port"], f"/api/runs/{run}/events/", token, reconnect=False,
                  head_timeout=60.0)


def test_streams_opened_while_publishing_get_every_event(via_edge, edge, users):
    owner = via_edge("owner")
    runs = [start_run(owner)["id"] for _ in range(3)]
    runs = [wait_run(owner, run, "paused")["id"] for run in runs]
    counters = {run: len(published_events(run)) for run in runs}
    tokens = [users["owner_token"], users["reviewer_token"]]
    # One run has a stream open throughout (its channel subscribed in Pushpin already);
    # the others have none between rounds (each round's streams subscribe it anew).
    watched = runs[0]
    keeper = Streams()
    keeper.open([_stream(edge, watched, tokens[0])])
    late: list[tuple[str, int, float]] = []
    try:
        for round_ in range(10):
            held = Streams()
            opened = [(run, _stream(edge, run, tokens[(round_ + i) % 2]))
                      for i, run in enumerate(runs)]
            try:
                held.open([s for _, s in opened])
                # One event per run at a random moment of the stream's opening: before the
                # web reads the store, between that read and the hold, or after.
                time.sleep(random.uniform(0.0, 0.06))
                for run in runs:
                    counters[run] += 1
                    publish(run, [CustomEvent(name="hold-race", value=counters[run])])
                published_at = time.monotonic()

                def complete(opened=opened) -> bool:
                    return all(s.numbers[-1:] == [counters[run]] for run, s in opened)

                try:
                    wait_for(complete, timeout=PROMPT, what="every event")
                except AssertionError:
                    late += [(run[:8], round_, s.numbers[-3:]) for run, s in opened
                             if s.numbers[-1:] != [counters[run]]]
                    wait_for(complete, timeout=150, what="every event, at last",
                             state=lambda opened=opened: str([(s.status, s.numbers[-3:])
                                                              for _, s in opened]))
                    late[-1] += (time.monotonic() - published_at,)
                for run, stream in opened:
                    assert stream.status == 200 and stream.stalls == 0
                    # Each id once, in order, from the first.
                    assert stream.numbers == list(range(1, counters[run] + 1))
            finally:
                held.close()
        assert not late, f"events that came only after {PROMPT} s: {late}"
        assert keeper.streams[0].numbers == list(range(1, counters[watched] + 1))
    finally:
        keeper.close()


def test_a_long_run_is_sent_in_full(via_edge, edge, users):
    owner = via_edge("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")["id"]
    total = len(published_events(run))
    for _ in range(150):  # more than one answer of the library carries (100)
        total += 1
        publish(run, [CustomEvent(name="long-run", value=total)])
    held = Streams()
    stream = _stream(edge, run, users["reviewer_token"])
    try:
        held.open([stream])
        wait_for(lambda: len(stream.numbers) >= total, timeout=PROMPT, what="every event",
                 state=lambda: f"{len(stream.numbers)} of {total}: {stream.numbers[-3:]}")
        assert stream.numbers == list(range(1, total + 1))
    finally:
        held.close()


"""The topology: Pushpin, two web processes, two workers, Postgres, Redis.

100 streams are held by Pushpin while events are published on their runs' channels.
Killing the first web process (the one Pushpin routes to) loses nothing: no web process
holds a stream; new streams open on the second. Killing Pushpin drops every stream; the
clients reconnect with Last-Event-ID once it is back and get what was published
meanwhile. Every stream ends with each of its channel's ids exactly once, in order.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from ag_ui.core import CustomEvent

from agentsite.processes import crash
from streams.publish import publish
from tests.edge.sse_many import Stream
from tests.helpers import published_events, start_run, wait_run

# CUSTOM events are published by hand after the runs' RUN_FINISHED (paused).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agui_unchecked]

RUNS, PER_RUN = 4, 25  # 100 streams


class Streams:
    """Streams run by an asyncio loop in a thread, stopped together."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.stop = asyncio.Event()
        self.streams: list[Stream] = []
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def open(self, streams: list[Stream]) -> None:
        self.streams += streams
        for stream in streams:
            asyncio.run_coroutine_threadsafe(stream.run(self.stop), self.loop)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        time.sleep(0.5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def wait_for(check, timeout: float = 30.0, what: str = "", state=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {state()}"
        time.sleep(0.05)


def test_streams_survive_a_web_kill_and_a_pushpin_restart(via_edge, edge, users):
    owner = via_edge("owner")
    runs = [start_run(owner)["id"] for _ in range(RUNS)]
    runs = [wait_run(owner, run, "paused")["id"] for run in runs]
    counters = {run: len(published_events(run)) for run in runs}
    tokens = [users["owner_token"], users["reviewer_token"]]

    def streams_of(run: str, n: int) -> list[Stream]:
        return [Stream(edge["port"], f"/api/runs/{run}/events/", tokens[i % 2])
                for i in range(n)]

    def send(count: int) -> None:
        for _ in range(count):
            for run in runs:
                counters[run] += 1
                publish(run, [CustomEvent(name="edge-test", value=counters[run])])
            time.sleep(0.01)

    def caught_up(streams: list[Stream]) -> bool:
        return all(s.numbers and s.numbers[-1] == counters[run_of[id(s)]] for s in streams)

    def state() -> str:
        behind = [(run_of[id(s)][:8], s.status, s.connects, s.numbers[-3:], s.controls[-2:],
                   counters[run_of[id(s)]]) for s in first + later if not caught_up([s])]
        return f"{len(behind)} behind, e.g. {behind[:5]}"

    held = Streams()
    first: list[Stream] = []
    later: list[Stream] = []
    run_of: dict[int, str] = {}
    try:
        first += [s for run in runs for s in streams_of(run, PER_RUN)]
        for i, stream in enumerate(first):
            run_of[id(stream)] = runs[i // PER_RUN]
        held.open(first)
        wait_for(lambda: all(s.opened_at for s in first), what="100 streams open", state=state)
        assert {s.status for s in first} == {200}

        send(5)
        crash(edge["webs"][0])  # the web process Pushpin routes to first
        send(5)
        later += [s for run in runs for s in streams_of(run, 2)]  # opened on the second one
        for i, stream in enumerate(later):
            run_of[id(stream)] = runs[i // 2]
        held.open(later)
        send(5)
        wait_for(lambda: caught_up(first + later), what="events after the web kill", state=state)
        assert sum(s.drops for s in first + later) == 0  # no open stream was dropped

        crash(edge["pushpin"])  # the runner and its services
        send(5)  # published while no proxy is up: in the store only
        edge["pushpin"].start()
        send(5)
        wait_for(lambda: caught_up(first + later), what="events after the Pushpin restart",
                 state=state)
        assert all(s.drops >= 1 for s in first + later)  # each was dropped, and came back
    finally:
        held.close()
        if edge["webs"][0].proc.poll() is not None:
            edge["webs"][0].start()
        if edge["pushpin"].proc.poll() is not None:
            edge["pushpin"].start()

    # A request Pushpin 1.36 left unanswered or refused with a 502 (docs/scaling.md,
    # "Known issues") was made again; it is counted, not hidden.
    print("unanswered requests made again:", sum(s.stalls for s in first + later),
          "; refused (5xx) and made again:", sum(s.refusals for s in first + later))
    for stream in first + later:
        run = run_of[id(stream)]
        # Every id of the channel, once each, in order: no gap, no duplicate.
        assert stream.numbers == list(range(1, counters[run] + 1)), (run, stream.numbers)

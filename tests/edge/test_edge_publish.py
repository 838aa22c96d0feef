"""Both ways the edge forwarder publishes to Pushpin deliver every event once, in order:
over ZeroMQ (GRIP_ZMQ_PUSH_URI, the stack's forwarder, as make run's) and to the HTTP
publish endpoint (GRIP_URL alone, as for Fastly Fanout). Each has the proxy to itself
while its events are published, so what the stream gets came through it; a forwarder
restarted in between loses nothing either."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from ag_ui.core import CustomEvent

from agentsite.processes import edge_process
from streams.publish import publish
from tests.edge.sse_many import Stream
from tests.helpers import published_events, start_run, wait_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agui_unchecked]


def test_zmq_and_http_forwarders_each_deliver_in_order(via_edge, edge, users, tmp_path):
    owner = via_edge("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")["id"]
    sent = len(published_events(run))
    stream = Stream(edge["port"], f"/api/runs/{run}/events/", users["reviewer_token"])
    stop = asyncio.Event()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(stream.run(stop),),
                              daemon=True)
    thread.start()

    def send(count: int) -> None:
        nonlocal sent
        for _ in range(count):
            sent += 1
            publish(run, [CustomEvent(name="edge-publish", value=sent)])

    def delivered(what: str) -> None:
        deadline = time.monotonic() + 10  # well inside the proxy's own recheck (120 s)
        while not (stream.numbers and stream.numbers[-1] == sent):
            assert time.monotonic() < deadline, (what, stream.numbers[-5:], sent)
            time.sleep(0.05)

    http_env = {k: v for k, v in edge["env"].items() if k != "GRIP_ZMQ_PUSH_URI"}
    http = edge_process(http_env, tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not stream.opened_at:
            assert time.monotonic() < deadline, (stream.status, stream.error_body)
            time.sleep(0.05)
        send(5)
        delivered("over ZeroMQ")

        assert "(ZeroMQ)" in edge["forwarder"].log()
        edge["forwarder"].stop()
        http.start()
        assert "(HTTP)" in http.log()
        send(5)
        delivered("to the HTTP publish endpoint")

        http.stop()
        edge["forwarder"].start()
        send(5)
        delivered("over ZeroMQ, after the forwarder's restart")
    finally:
        http.stop()
        if edge["forwarder"].proc.poll() is not None:
            edge["forwarder"].start()
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)
    assert stream.numbers == list(range(1, sent + 1))  # once each, in order
    assert stream.connects == 1  # no reconnect hid a gap


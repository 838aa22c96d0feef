"""`EDGE=pushpin make run`'s launcher (agentsite.launch): Pushpin in front of the web
process and the edge forwarder, all supervised. A run started through Pushpin pauses, and
its stream, held by Pushpin, gets every event, an event published later included (the
forwarder pushing over ZeroMQ, GRIP_ZMQ_PUSH_URI, as the launcher sets it); a killed
forwarder is started again; a killed web server (uvicorn with two workers) takes its
workers with it and is started again on its port, the held stream going on; the
launcher killed with SIGKILL leaves no child behind, Pushpin's services included
(tests/faults/test_launcher.py: SIGTERM stops everything)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import threading
import time

import httpx
import pytest
from ag_ui.core import CustomEvent

from agentsite.ports import free_port_block
from agentsite.processes import children_of, free_port, pushpin_installed
from streams.publish import publish
from tests.edge.sse_many import Stream
from tests.faults.test_launcher import _alive, _wait_for, start_launcher
from tests.helpers import published_events, start_run, wait_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agui_unchecked]


def test_make_run_with_pushpin_serves_held_streams(users, tmp_path):
    if not pushpin_installed():
        pytest.skip("pushpin is not installed (make test installs it)")
    port = free_port_block(2)  # the launcher's web process listens on port + 1
    launcher, log = start_launcher(tmp_path, port, EDGE="pushpin", WEB_PROCESSES="2",
                                   GRIP_PUBLISH_PORT=str(free_port()),
                                   GRIP_PUSH_PORT=str(free_port()))
    stop = asyncio.Event()
    loop = asyncio.new_event_loop()
    try:
        _wait_for(log, r" ready\.", proc=launcher)  # the Celery worker
        _wait_for(log, r"edge forwarder: subscribed; publishing to tcp://\S+ \(ZeroMQ\)",
                  proc=launcher)
        pushpin_pid = int(_wait_for(log, r"started pushpin \(pid (\d+)\)")[0])
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, headers={
                "Authorization": f"Token {users['owner_token']}"}) as owner:
            deadline = time.monotonic() + 60
            while True:  # Pushpin answers 502 until its web process is up
                try:
                    if owner.get("/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, log.read_text()[-4000:]
                time.sleep(0.3)
            run = wait_run(owner, start_run(owner)["id"], "paused")["id"]
        sent = len(published_events(run))
        stream = Stream(port, f"/api/runs/{run}/events/", users["owner_token"])
        thread = threading.Thread(target=loop.run_until_complete, args=(stream.run(stop),),
                                  daemon=True)
        thread.start()

        def delivered(what: str) -> None:
            deadline = time.monotonic() + 30
            while not (stream.numbers and stream.numbers[-1] == sent):
                assert time.monotonic() < deadline, (what, stream.numbers[-5:], sent,
                                                     log.read_text()[-3000:])
                time.sleep(0.05)

        delivered("the paused run's events")
        assert stream.opened_at and stream.connects == 1  # held, not a direct answer
        sent += 1
        publish(run, [CustomEvent(name="launcher-edge", value=sent)])
        delivered("an event published after the open")

        forwarder_pid = int(_wait_for(log, r"started edge \(pid (\d+)\)")[0])
        os.kill(forwarder_pid, signal.SIGKILL)
        _wait_for(log, r"started edge \(pid (\d+)\)", count=2)
        _wait_for(log, "edge forwarder: subscribed", count=2)
        sent += 1
        publish(run, [CustomEvent(name="launcher-edge", value=sent)])
        delivered("an event after the forwarder's restart")
        assert stream.numbers == list(range(1, sent + 1))

        # uvicorn's master killed: its workers go with it (else they keep the port, and
        # every restart fails with "Address already in use"), and a new one serves.
        web_pid = int(_wait_for(log, r"started web \(pid (\d+)\)")[0])
        workers = children_of(web_pid)
        assert len(workers) >= 2, workers  # (and uvicorn's multiprocessing helper)
        os.kill(web_pid, signal.SIGKILL)
        _wait_for(log, rf"web \(pid {web_pid}\) left \d+ processes behind", timeout=15)
        assert not [pid for pid in workers if _alive(pid)]
        new_web = int(_wait_for(log, r"started web \(pid (\d+)\)", count=2)[1])
        _wait_for(log, rf"Started parent process \[{new_web}\]")
        serving = time.monotonic() + 60
        while True:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as anyone:
                if anyone.get("/healthz").status_code == 200:
                    break
            assert time.monotonic() < serving, log.read_text()[-4000:]
            time.sleep(0.3)
        assert _alive(new_web) and "Address already in use" not in log.read_text()
        sent += 1
        publish(run, [CustomEvent(name="launcher-edge", value=sent)])
        delivered("an event after the web server's restart")  # held by Pushpin throughout

        # The supervisor killed outright: every child gets SIGTERM from the kernel
        # (PR_SET_PDEATHSIG) and stops what it started; nothing is left serving.
        children = [int(pid) for pid in re.findall(r"started \w+ \(pid (\d+)\)",
                                                     log.read_text())]
        children += children_of(pushpin_pid) + children_of(new_web)  # condure, zurl, ...
        os.kill(launcher.pid, signal.SIGKILL)
        launcher.wait(10)
        gone = time.monotonic() + 60
        while alive := [pid for pid in children if _alive(pid)]:
            assert time.monotonic() < gone, (alive, log.read_text()[-3000:])
            time.sleep(0.2)
    finally:
        loop.call_soon_threadsafe(stop.set)
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait(10)

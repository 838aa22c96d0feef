"""A port chosen for a server and taken by another process before the server bound it (a
parallel test process, another suite on the machine): the start still succeeds, on fresh
ports. Pushpin (which failed with "unable to bind" in a CI run) and uvicorn, started as the
suite starts them, with the port they are first given held by a listening socket here.
Pushpin's handler does not even fail on a taken publish port: another process would
answer there, so the start checks the port is Pushpin's own."""

from __future__ import annotations

import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentsite.ports import PortTaken, free_port, port_range, retry_taken_ports
from agentsite.processes import (
    Process,
    pushpin_config,
    pushpin_installed,
    pushpin_process,
    web_process,
)


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another process listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", free_port()))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize("which", ["http", "publish", "push"])
def test_pushpin_starts_on_fresh_ports_when_one_was_taken(live, tmp_path, taken, which):
    if not pushpin_installed():
        pytest.skip("pushpin is not installed (make test installs it)")
    target = int(live["base_url"].rsplit(":", 1)[1])
    tries: list[dict[str, int]] = []
    # Pushpin's ZeroMQ sockets live in its run dir: a short path (ipc paths have a limit).
    short = Path(tempfile.mkdtemp(prefix="pp-"))

    def start() -> tuple[Process, dict[str, int]]:
        ports = {"http": free_port(), "publish": free_port(), "push": free_port()}
        if not tries:
            ports[which] = taken
        tries.append(ports)
        conf = pushpin_config(short / str(len(tries)), http_port=ports["http"],
                              publish_port=ports["publish"], sig_key=secrets.token_hex(8),
                              targets=[target], push_port=ports["push"])
        pushpin = pushpin_process(conf, ports["http"], ports["publish"], live["env"],
                                  tmp_path)
        pushpin.start()
        return pushpin, ports

    pushpin, ports = retry_taken_ports(start)
    try:
        assert len(tries) == 2 and ports[which] != taken
        assert pushpin.holds_port(ports["publish"]) and pushpin.holds_port(ports["http"])
        r = httpx.get(f"http://127.0.0.1:{ports['http']}/healthz", timeout=10)
        assert r.status_code == 200
    finally:
        pushpin.stop()
        shutil.rmtree(short, ignore_errors=True)


def test_web_starts_on_a_fresh_port_when_its_port_was_taken(live, tmp_path, taken):
    tries: list[int] = []

    def start() -> tuple[Process, int]:
        port = taken if not tries else free_port()
        tries.append(port)
        web = web_process(port, live["env"], tmp_path)
        web.start()
        return web, port

    web, port = retry_taken_ports(start)
    try:
        assert tries == [taken, port]
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
    finally:
        web.stop()


def test_a_taken_port_is_given_up_after_the_last_try(live, tmp_path, taken):
    def start() -> Process:
        web = web_process(taken, live["env"], tmp_path)
        web.start()
        return web

    with pytest.raises(PortTaken):
        retry_taken_ports(start, attempts=2)


def test_ports_are_chosen_outside_the_ephemeral_range_one_slice_per_test_process():
    low, high = (int(v) for v in open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
    slices = [port_range(f"gw{n}") for n in range(4)]
    for ports in slices:
        assert ports.stop - 1 < low or ports.start > high
    for a, b in zip(slices, slices[1:], strict=False):
        assert a.stop <= b.start  # disjoint
    chosen = {free_port() for _ in range(50)}
    assert len(chosen) == 50  # never the same port twice in a process

"""Ports for the servers we start (uvicorn, Pushpin, the embedded Redis and Postgres), and
what to do when one was taken before the server bound it.

A port is chosen here, then bound by another process later: in between, anyone may take
it. ``bind(0)`` hands every process on the machine ports from the same ephemeral range,
so parallel test processes (pytest-xdist, other suites on the same machine) were given the
same just-closed port, and Pushpin failed with "unable to bind". So ``free_port`` picks at
random below the ephemeral range (where no outgoing connection gets its port either), in
a slice of its own per xdist worker, never the same port twice in a process, and checks
it is free right before handing it out. What is left of the race is caught where it
shows: the server's log says its port is taken (``port_taken``), ``Process.start`` raises
``PortTaken``, and the starter tries again with fresh ports (``retry_taken_ports``).
"""

from __future__ import annotations

import os
import random
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# Below Linux's default ephemeral range (32768-60999), above most fixed service ports.
LOW, HIGH = 20_000, 32_767
# Slices per xdist worker (gw0, gw1, ...); a process outside xdist uses the whole range.
SLICES = 8
# What our servers log when a port given to them is taken (uvicorn, Pushpin's condure
# and handler, Redis, Postgres).
BIND_FAILURES = ("address already in use", "unable to bind", "failed to bind",
                 "could not bind", "could not create server tcp listening socket")
# How many times a start is tried with fresh ports.
PORT_ATTEMPTS = 5

_handed_out: set[int] = set()
_random = random.SystemRandom()


class PortTaken(RuntimeError):
    """A server could not listen on a port it was given: another process took it first."""


def port_taken(log: str) -> bool:
    """Whether a server's log says that a port it was given is taken."""
    lowered = log.lower()
    return any(failure in lowered for failure in BIND_FAILURES)


def _ephemeral() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32_768, 60_999


def port_range(worker: str | None = None) -> range:
    """The ports ``free_port`` picks from in this process: outside the ephemeral range,
    the xdist ``worker``'s own slice (``PYTEST_XDIST_WORKER``; None: the environment's)."""
    low, high = LOW, HIGH
    ephemeral_low, ephemeral_high = _ephemeral()
    if ephemeral_low <= low <= ephemeral_high:
        low = ephemeral_high + 1
    if ephemeral_low <= high <= ephemeral_high:
        high = ephemeral_low - 1
    if high - low < 100:  # no room outside it: the whole unprivileged range
        low, high = 1024, 65_535
    worker = worker if worker is not None else os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        size = (high - low + 1) // SLICES
        low += (int(worker[2:]) % SLICES) * size
        high = low + size - 1
    return range(low, high + 1)


def bindable(port: int) -> bool:
    """Whether a listening socket can be bound on 127.0.0.1:``port`` now."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A port free now, for a server about to be started on 127.0.0.1."""
    ports = port_range()
    for _ in range(200):
        port = _random.choice(ports)
        if port not in _handed_out and bindable(port):
            _handed_out.add(port)
            return port
    with socket.socket() as s:  # the range is crowded: the kernel's choice
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_block(size: int) -> int:
    """The first of ``size`` consecutive ports, all free now: for a server that puts its
    own children on the ports after its own (``make run``'s edge runs the web process on
    PORT + 1), so that no later ``free_port`` hands one of them to another server."""
    ports = port_range()
    for _ in range(200):
        first = _random.choice(ports[:-size])
        block = range(first, first + size)
        if not _handed_out.intersection(block) and all(bindable(p) for p in block):
            _handed_out.update(block)
            return first
    raise RuntimeError(f"no {size} consecutive free ports in {ports}")


def retry_taken_ports(start: Callable[[], T], *, attempts: int = PORT_ATTEMPTS) -> T:
    """``start()`` (which picks its ports with ``free_port`` and starts servers on them,
    stopping what it started when it fails), tried again with fresh ports while a
    server finds one of its ports taken."""
    for attempt in range(1, attempts + 1):
        try:
            return start()
        except PortTaken as exc:
            if attempt == attempts:
                raise
            print(f"port taken ({exc}); starting again on fresh ports", file=sys.stderr)
    raise AssertionError("unreachable")


def listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on TCP ``port`` (Linux ``/proc/net/tcp*``)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(fields[9])
    return found


def held_by(port: int, pids: list[int]) -> bool:
    """Whether one of ``pids`` holds the socket listening on ``port`` (Linux ``/proc``;
    elsewhere there is no telling: True)."""
    if not Path("/proc/net/tcp").exists():
        return True
    inodes = {f"socket:[{inode}]" for inode in listening_inodes(port)}
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in inodes:
                    return True
            except OSError:
                continue
    return False

"""Every command Redis runs while a test watches (Redis's ``MONITOR``), split at marks.

Deterministic counts of what a process sends Redis: a mark is an ``ECHO`` the monitor
sees in the server's own order, so the commands between two marks are what ran between
them. Commands a Lua script runs (``redis.call``) are kept apart from the clients' own.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psutil
import redis
from django.conf import settings

MARK = "agentsite-test-mark:"
# `1733300000.123456 [0 127.0.0.1:51234] "EVAL" "..." "2"` (`[0 lua]` inside a script)
LINE = re.compile(r'[\d.]+ \[\d+ (?P<client>[^\]]*)\] (?P<command>.*)', re.S)
ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclass
class Command:
    client: str  # "host:port" of the client's connection, or "lua"
    name: str  # upper case
    args: list[str]


@dataclass
class Watched:
    """The commands between two marks."""

    commands: list[Command] = field(default_factory=list)

    def sent_by(self, clients: set[str]) -> list[Command]:
        return [c for c in self.commands if c.client in clients]

    @staticmethod
    def names(commands: list[Command]) -> Counter[str]:
        return Counter(c.name for c in commands)


class RedisMonitor:
    """``with RedisMonitor() as watch: ...; watch.mark("claim"); ...``; then
    ``watch.spans["claim"]`` holds what ran between the previous mark and that one."""

    def __init__(self) -> None:
        self.spans: dict[str, Watched] = {}
        self._current = Watched()
        self._client = redis.Redis(**settings.EVENTSTREAM_REDIS)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._seen = threading.Condition()
        self._marks_seen: list[str] = []

    def __enter__(self) -> RedisMonitor:
        self._monitor = self._client.monitor().__enter__()
        self._thread.start()
        self.mark("")  # what ran before this is not ours
        return self

    def __exit__(self, *exc: Any) -> None:
        self.mark("end-of-watch")
        self._thread.join(10)
        self._monitor.__exit__(*exc)
        self._client.close()

    def mark(self, name: str) -> None:
        """Close the span named ``name``, and wait until the monitor has seen the mark."""
        self._client.echo(MARK + name)
        with self._seen:
            assert self._seen.wait_for(lambda: name in self._marks_seen, timeout=10), name

    def _read(self) -> None:
        while True:
            line = self._monitor.connection.read_response()
            if not line:
                continue
            if isinstance(line, bytes):
                line = line.decode(errors="replace")
            head = LINE.match(line)
            assert head, line
            words = ARG.findall(head["command"])
            name, args = words[0].upper(), words[1:]
            if name == "ECHO" and args and args[0].startswith(MARK):
                mark = args[0][len(MARK):]
                with self._seen:
                    if mark:
                        self.spans[mark] = self._current
                    self._current = Watched()
                    self._marks_seen.append(mark)
                    self._seen.notify_all()
                if mark == "end-of-watch":
                    return
                continue
            client = head["client"]
            self._current.commands.append(Command(client, name, args))


def this_process_clients() -> set[str]:
    """The "host:port" of every TCP connection this process holds to the test Redis."""
    port = int(settings.EVENTSTREAM_REDIS.get("port", 6379))
    return {f"{c.laddr.ip}:{c.laddr.port}" for c in psutil.Process().net_connections("tcp")
            if c.raddr and c.raddr.port == port}

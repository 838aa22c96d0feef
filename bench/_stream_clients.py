"""The stream bench's clients: N SSE streams spread over K processes (bench/streams.py).

One Python process parsing 10,000 streams on this 2-CPU machine measures itself, so the
streams are split over K forked processes, each an asyncio loop of ``tests.edge.sse_many``
streams. The parent drives them in steps over a pipe (open, measure, collect, close) and
each step's answer carries what that process saw and the CPU it used (utime + stime), so
the bench can print how much of the machine the client itself took.

No Django here: the processes are forked from the bench before anything is opened.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import resource
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection

from tests.edge.sse_many import Stream


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _serve(conn: Connection, port: int, paths: list[str], token: str, wave: int) -> None:
    loop = asyncio.get_running_loop()

    async def recv() -> object:
        return await loop.run_in_executor(None, conn.recv)

    await recv()  # "open"
    cpu0 = cpu_seconds()
    stop = asyncio.Event()
    streams = [Stream(port, path, token, head_timeout=120, reconnect=False) for path in paths]
    tasks = []
    for first in range(0, len(streams), wave):  # in waves, as browsers arrive
        batch = streams[first:first + wave]
        tasks += [asyncio.ensure_future(s.run(stop, stamp=True)) for s in batch]
        wave_end = time.monotonic() + 2
        while not all(s.status for s in batch) and time.monotonic() < wave_end:
            await asyncio.sleep(0.01)
    deadline = time.monotonic() + 180
    while (sum(1 for s in streams if s.opened_at or s.status not in (0, 200)) < len(streams)
           and time.monotonic() < deadline):
        await asyncio.sleep(0.05)
    conn.send({"opened_at": [s.opened_at for s in streams],
               "status": [s.status for s in streams],
               "errors": [s.error_body.decode(errors="replace")[:300] for s in streams
                          if s.status not in (0, 200)][:5],
               "cpu": cpu_seconds() - cpu0})

    expected = await recv()  # events per stream to come: the publisher starts next
    since = time.time()  # events published from now on; stored ones read late are not
    for s in streams:
        s.latencies.clear()
        s.since = since
    cpu0 = cpu_seconds()
    conn.send("ready")
    timeout = await recv()  # the publisher is done: collect what is still on its way
    deadline = time.monotonic() + timeout
    opened = [s for s in streams if s.opened_at]
    while (any(len(s.latencies) < expected for s in opened)  # type: ignore[operator]
           and time.monotonic() < deadline):
        await asyncio.sleep(0.05)
    conn.send({"latencies": [x for s in streams for x in s.latencies],
               "got": sum(len(s.latencies) for s in opened),
               "drops": sum(s.drops for s in streams), "cpu": cpu_seconds() - cpu0})

    await recv()  # "close"
    stop.set()
    await asyncio.sleep(0.5)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    conn.send("closed")


def _main(conn: Connection, port: int, paths: list[str], token: str, wave: int) -> None:
    asyncio.run(_serve(conn, port, paths, token, wave))


@dataclass
class Opened:
    opened: int
    refused: dict[int, int]  # status -> count (0: no answer)
    open_s: float  # the first connect -> the last stream-open
    cpu: float  # the clients' CPU seconds while opening
    errors: list[str]


@dataclass
class Collected:
    latencies: list[float]
    got: int
    drops: int
    cpu: float  # the clients' CPU seconds from before the first publish to the last event


class Clients:
    """K forked client processes holding ``paths`` (one stream each) on ``port``."""

    def __init__(self, k: int, port: int, paths: list[str], token: str, wave: int) -> None:
        context = multiprocessing.get_context("fork")
        self.pipes: list[Connection] = []
        self.procs = []
        for i in range(k):
            parent, child = context.Pipe()
            proc = context.Process(target=_main, daemon=True,
                                   args=(child, port, paths[i::k], token, max(1, wave // k)))
            proc.start()
            child.close()
            self.pipes.append(parent)
            self.procs.append(proc)

    def _all(self, message: object) -> list:
        for pipe in self.pipes:
            pipe.send(message)
        return [pipe.recv() for pipe in self.pipes]

    def open(self) -> Opened:
        began = time.monotonic()
        answers = self._all("open")
        opened_at = [t for a in answers for t in a["opened_at"] if t]
        refused: dict[int, int] = {}
        for a in answers:
            for status in a["status"]:
                if status != 200:
                    refused[status] = refused.get(status, 0) + 1
        return Opened(len(opened_at), refused,
                      (max(opened_at) - began) if opened_at else float("nan"),
                      sum(a["cpu"] for a in answers), [e for a in answers for e in a["errors"]])

    def measure(self, events_per_stream: int) -> None:
        self._all(events_per_stream)

    def collect(self, timeout: float) -> Collected:
        answers = self._all(timeout)
        return Collected([x for a in answers for x in a["latencies"]],
                         sum(a["got"] for a in answers), sum(a["drops"] for a in answers),
                         sum(a["cpu"] for a in answers))

    def close(self) -> None:
        self._all("close")
        for proc in self.procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()

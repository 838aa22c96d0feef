"""Many SSE streams from one asyncio loop, on plain sockets (HTTP/1.1, chunked or not):
cheap enough for 10,000 in one process (bench/streams.py) and exact about ids (each
stream keeps every ``<channel>:<n>`` it got, and reconnects with ``Last-Event-ID``).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field


async def read_headers(reader: asyncio.StreamReader) -> dict[str, str]:
    """An HTTP response's headers (after its status line), names lower-cased."""
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            return headers
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()


@dataclass
class Stream:
    port: int
    path: str
    token: str
    reconnect: bool = True
    status: int = 0
    opened_at: float = 0.0  # when the first ``stream-open`` arrived (monotonic)
    numbers: list[int] = field(default_factory=list)  # every event's n, in arrival order
    latencies: list[float] = field(default_factory=list)  # seconds, for data with "t"
    since: float = 0.0  # latencies only of events stamped at or after this time.time()
    controls: list[str] = field(default_factory=list)  # stream-open, stream-error, ...
    connects: int = 0
    drops: int = 0  # streams that had opened and then ended (the proxy went away)
    # Requests left unanswered for ``head_timeout`` seconds, then made again (a browser's
    # EventSource would wait: see docs/scaling.md, "Known issues").
    stalls: int = 0
    head_timeout: float = 10.0
    # 5xx answers made again: Pushpin's 502 (its queue to zurl full) and 500 "Accept
    # service unavailable." (its handler not reachable yet, right after a restart).
    refusals: int = 0
    last_id: str | None = None
    error_body: bytes = b""

    async def run(self, stop: asyncio.Event, stamp: bool = False) -> None:
        while not stop.is_set():
            try:
                await self._once(stop, stamp)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                pass
            if self.reconnect and self.status >= 500:
                self.refusals += 1  # made again, later (docs/scaling.md, "Known issues")
            elif not self.reconnect or self.status not in (0, 200) or stop.is_set():
                return
            await asyncio.sleep(0.1 + random.random())  # many clients: spread out

    async def _once(self, stop: asyncio.Event, stamp: bool) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port, limit=2 ** 20)
        self.connects += 1
        try:
            head = (f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                    "Accept: text/event-stream\r\n")
            if self.token:
                head += f"Authorization: Token {self.token}\r\n"
            if self.last_id:
                head += f"Last-Event-ID: {self.last_id}\r\n"
            writer.write((head + "\r\n").encode())
            await writer.drain()
            try:
                status_line = await asyncio.wait_for(reader.readline(), self.head_timeout)
            except TimeoutError:
                self.stalls += 1
                return
            if not status_line:
                raise ValueError("no answer")
            self.status = int(status_line.split()[1])
            headers = await read_headers(reader)
            if self.status != 200:
                length = int(headers.get("content-length", "0"))
                self.error_body = await reader.readexactly(length) if length else b""
                return
            chunked = headers.get("transfer-encoding", "").lower() == "chunked"
            buffer = ""
            reading = asyncio.ensure_future(stop.wait())
            ended = True  # by the server, unless the client stops
            try:
                while True:
                    if chunked:
                        size_task = asyncio.ensure_future(reader.readline())
                        done, _ = await asyncio.wait({size_task, reading},
                                                     return_when=asyncio.FIRST_COMPLETED)
                        if reading in done:
                            size_task.cancel()
                            ended = False
                            return
                        size = int(size_task.result().strip() or b"0", 16)
                        if size == 0:
                            return
                        data = await reader.readexactly(size + 2)
                        text = data[:-2].decode()
                    else:
                        read = asyncio.ensure_future(reader.read(65536))
                        done, _ = await asyncio.wait({read, reading},
                                                     return_when=asyncio.FIRST_COMPLETED)
                        if reading in done:
                            read.cancel()
                            ended = False
                            return
                        if not read.result():
                            return
                        text = read.result().decode()
                    buffer += text
                    *blocks, buffer = buffer.split("\n\n")
                    now = time.time()
                    for block in blocks:
                        self._event(block, now, stamp)
            finally:
                reading.cancel()
                if ended:
                    self.drops += 1
        finally:
            writer.close()

    def _event(self, block: str, now: float, stamp: bool) -> None:
        event, event_id, data = "message", None, []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                event = value
            elif name == "id":
                event_id = value
            elif name == "data":
                data.append(value)
        if event != "message":
            self.controls.append(event)
            if event == "stream-open" and not self.opened_at:
                self.opened_at = time.monotonic()
            return
        if event_id:
            self.last_id = event_id
            self.numbers.append(int(event_id.rsplit(":", 1)[1].split(".")[0]))
        if stamp and data:
            text = "\n".join(data)
            at = text.find('"t":')
            if at >= 0:
                end = text.find("}", at)
                stamped = float(text[at + 4:end].split(",")[0])
                if stamped >= self.since:  # not history from before (read late)
                    self.latencies.append(now - stamped)

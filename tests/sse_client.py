"""A small blocking SSE reader for the tests (httpx streaming, one event at a time)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class SseEvent:
    event: str
    id: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)

    @property
    def number(self) -> int:
        """The per-channel sequence number of a single-channel id ``<channel>:<n>``."""
        assert self.id and "," not in self.id, self.id
        return int(self.id.rsplit(":", 1)[1])


class SseStream:
    """Open with ``SseStream(client, url)``; ``status`` is known before any event is read."""

    def __init__(self, client: httpx.Client, url: str, headers: dict[str, str] | None = None,
                 params: dict[str, str] | None = None) -> None:
        self._cm = client.stream("GET", url, headers=headers, params=params)
        self.response = self._cm.__enter__()
        self.status = self.response.status_code
        self._lines = self.response.iter_lines()

    def next(self, *, skip_control: bool = True) -> SseEvent:
        """The next event (``message``s only unless ``skip_control`` is False)."""
        while True:
            event, event_id, data = "message", None, []
            for line in self._lines:
                if line == "":
                    if data or event != "message":
                        break
                    continue
                if line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "event":
                    event = value
                elif name == "id":
                    event_id = value
                elif name == "data":
                    data.append(value)
            else:
                raise EOFError("stream ended")
            got = SseEvent(event, event_id, "\n".join(data))
            if skip_control and got.event in ("stream-open", "keep-alive"):
                continue
            return got

    def json(self) -> Any:
        """The body of a non-stream (error) answer."""
        self.response.read()
        return self.response.json()

    def close(self) -> None:
        self._cm.__exit__(None, None, None)

    def __enter__(self) -> SseStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

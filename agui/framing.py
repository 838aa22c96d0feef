"""The AG-UI answer's SSE framing: a stream cut before its run ended never ends clean.

An AG-UI answer is done after its RUN_FINISHED / RUN_ERROR; a client must be able to
tell a stream that ended there from one that was cut (its web process killed). Directly
the client sees the cut as a broken body. Behind Pushpin it does not: Pushpin 1.36 ends
the client's response cleanly when its origin dies mid-answer (``proxysession.cpp``,
``destroyAll``: the body is ended, not the connection), so the official ``@ag-ui/client``
finishes without RUN_FINISHED, RUN_ERROR or ``onRunFailed``.

So the next event's frame is opened before it is known: after every event but a run's
last, ``data: `` is written at once and the event's JSON follows on that line when it
comes. A stream cut between events (or inside one) ends inside a frame whose data is not
JSON, which the client refuses (``@ag-ui/client`` parses what is left at the end of the
body: ``onRunFailed``). On the wire this is plain SSE: the line is ``data: {json}`` as
ever (written in two pieces), so line-based readers see nothing new. A keep-alive while a
frame is open is a space on that line (JSON allows it), not a comment, which would end
the line.
"""

from __future__ import annotations

from agui.relay import TERMINAL

OPEN = "data: "  # the next event's frame, opened ahead of the event
KEEPALIVE = ": keepalive\n\n"


class Frames:
    """The SSE text of one AG-UI answer, event by event (module docstring)."""

    def __init__(self) -> None:
        self.open = False

    def start(self) -> str:
        """The answer's first bytes: a frame opened, so a cut before any event shows too."""
        self.open = True
        return OPEN

    def event(self, kind: str, data: str) -> str:
        """The frame of an event of type ``kind`` with JSON ``data``; a run's last event
        (RUN_FINISHED, RUN_ERROR) leaves no frame open, so the answer may end after it."""
        text = (data if self.open else OPEN + data) + "\n\n"
        self.open = kind not in TERMINAL
        return text + OPEN if self.open else text

    def keepalive(self) -> str:
        return " " if self.open else KEEPALIVE

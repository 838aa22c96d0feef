"""An AG-UI answer's framing (agui/framing.py): the whole answer is plain SSE with each
event's JSON on its ``data:`` line; cut anywhere before its run's last event, what is left
is not a clean end (the last frame's data is not JSON)."""

from __future__ import annotations

import json

from agui.framing import Frames

EVENTS = [("RUN_STARTED", '{"type":"RUN_STARTED"}'), ("TEXT_MESSAGE_START", '{"type":"A"}'),
          ("RUN_FINISHED", '{"type":"RUN_FINISHED"}')]


def _answer() -> list[str]:
    frames = Frames()
    out = [frames.start()]
    for kind, data in EVENTS[:2]:
        out.append(frames.event(kind, data))
    out.append(frames.keepalive())
    out.append(frames.event(*EVENTS[2]))
    out.append(frames.keepalive())  # after the end: a comment
    return out


def _parse(text: str) -> tuple[list[object], str]:
    """The events of complete frames, as @ag-ui/client reads them, and what is left."""
    *blocks, rest = text.split("\n\n")
    events = []
    for block in blocks:
        data = [line[5:].removeprefix(" ") for line in block.split("\n")
                if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events, rest


def test_the_answer_is_the_events_each_on_one_data_line():
    text = "".join(_answer())
    events, rest = _parse(text)
    assert events == [json.loads(data) for _, data in EVENTS]
    assert rest == ""
    lines = [line for line in text.split("\n") if line.startswith("data:")]
    assert [json.loads(line.removeprefix("data:")) for line in lines] == events


def test_a_cut_before_the_runs_end_leaves_a_frame_that_is_not_json():
    # A cut falls between two writes (the process dies between sends) or inside one.
    pieces = _answer()[:-1]  # up to the run's last event
    cuts = []
    for i, piece in enumerate(pieces):
        done = len("".join(pieces[:i]))
        if "{" in piece:  # inside an event's JSON
            cuts.append(done + piece.index("{") + 5)
        if i < len(pieces) - 1:
            cuts.append(done + len(piece))
    text = "".join(pieces)
    for cut in cuts:
        events, rest = _parse(text[:cut])
        data = [line for line in rest.split("\n") if line.startswith("data:")]
        assert data, (cut, rest)  # an unfinished frame, whose data does not parse
        try:
            json.loads("\n".join(line[5:] for line in data))
        except ValueError:
            continue
        raise AssertionError(f"a cut at {cut} leaves a whole event: {rest!r}")

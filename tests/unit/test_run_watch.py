"""The streams' watchdog (agui.relay.RunWatch): what a client was told against the run's
truth, and the true state sent after lost events keeping AG-UI's sequence rules."""

from __future__ import annotations

import json

from ag_ui.core import Interrupt

from agui.events import (
    messages_snapshot,
    run_finished_interrupt,
    run_finished_success,
    run_started,
    state_snapshot,
    step_started,
    text_content,
    text_start,
)
from agui.relay import RunWatch, Truth, Wire
from tests.agui_rules import validate_events

IDS = {"thread_id": "t", "run_id": "r"}


def wires(*events) -> list[Wire]:
    return [Wire.event(e) for e in events]


def paused_truth(*ids: str) -> list[Wire]:
    return wires(run_started(**IDS), state_snapshot({}), messages_snapshot([]),
                 run_finished_interrupt(**IDS, interrupts=[Interrupt(id=i, reason="input_required")
                                                     for i in ids]))


def told(watch: RunWatch, events: list[Wire]) -> list[dict]:
    for event in events:
        watch.saw(event)
    return [json.loads(e.data) for e in events]


def test_lost_end_of_an_open_run_is_closed_before_the_true_end():
    watch = RunWatch()
    sent = told(watch, wires(run_started(**IDS), step_started("finish"), text_start("m1"),
                             text_content("m1", "Na")))
    assert watch.agrees(Truth("running"))
    truth = Truth("paused", frozenset({"i1"}))
    assert not watch.strike(truth)  # once may be the worker's publish on its way
    assert watch.strike(truth)
    sent += [json.loads(e.data) for e in watch.bridge(paused_truth("i1"))]
    (run,) = validate_events(sent)
    assert [e["type"] for e in run[4:]] == ["TEXT_MESSAGE_END", "STEP_FINISHED",
                                           "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT",
                                           "RUN_FINISHED"]
    assert run[-1]["outcome"]["interrupts"] == [{"id": "i1", "reason": "input_required"}]
    assert watch.agrees(truth)


def test_an_ended_client_agrees_until_the_truth_moves_on():
    watch = RunWatch()
    told(watch, paused_truth("a", "b"))
    # Answering one of two questions publishes nothing on the run: still right.
    assert watch.agrees(Truth("paused", frozenset({"b"})))
    assert not watch.agrees(Truth("paused", frozenset({"c"})))  # a segment was lost
    assert not watch.agrees(Truth("completed"))
    assert not watch.agrees(Truth("failed"))
    assert not watch.agrees(None)
    # Not open: the true state comes as an AG-UI run of its own.
    events = told(RunWatch(), paused_truth("a", "b"))
    events += [json.loads(e.data) for e in watch.bridge(wires(
        run_started(**IDS), run_finished_success(**IDS, result={"status": "completed"})))]
    assert len(validate_events(events)) == 2
    assert watch.agrees(Truth("completed"))


def test_a_stream_resumed_after_the_end_learns_what_came_before():
    earlier = paused_truth("a")
    watch = RunWatch()  # began after the last stored event: saw nothing
    assert not watch.agrees(Truth("paused", frozenset({"a"})))
    watch.seed(earlier)
    assert watch.agrees(Truth("paused", frozenset({"a"})))

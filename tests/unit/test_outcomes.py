"""The outcome mapper: a run's status → the events that end its AG-UI run."""

from __future__ import annotations

import uuid

import pytest

from agui import outcomes
from hitl.models import AgentInterrupt
from runs.models import AgentRun

IDS = {"thread_id": "t-1", "run_id": "r-1"}


def run(status: str, **fields) -> AgentRun:
    return AgentRun(id=uuid.uuid4(), thread_id="t-1", agent="dev", status=status, **fields)


def kind(event) -> str:
    return event.type.value


def test_a_paused_run_ends_with_its_interrupts():
    row = AgentInterrupt(interrupt_id="i-1", kind="approval",
                         request={"type": "approval", "message": "Ship?"})
    event = outcomes.closing(run("paused"), **IDS, pending=[row])
    assert kind(event) == "RUN_FINISHED" and event.outcome.type == "interrupt"
    [interrupt] = event.outcome.interrupts
    assert (interrupt.id, interrupt.reason, interrupt.message) == ("i-1", "confirmation", "Ship?")
    assert interrupt.response_schema["required"] == ["approved"]


@pytest.mark.parametrize("status", ["completed", "rejected", "blocked"])
def test_an_ended_run_is_a_success_with_its_status_and_result(status):
    event = outcomes.closing(run(status, result={"n": 1}), **IDS)
    assert event.outcome.type == "success"
    assert event.result == {"status": status, "result": {"n": 1}}
    assert (event.thread_id, event.run_id) == ("t-1", "r-1")


def test_cancelled_and_failed():
    assert outcomes.closing(run("cancelled"), **IDS).outcome.type == "cancelled"
    error = outcomes.closing(run("failed", error="boom"), **IDS)
    assert kind(error) == "RUN_ERROR" and error.message == "boom"


def test_a_thread_without_a_run_is_an_empty_success():
    event = outcomes.closing(None, **IDS)
    assert event.outcome.type == "success" and event.result is None


@pytest.mark.parametrize("status", ["queued", "running", "resuming"])
def test_a_live_run_has_no_closing_event(status):
    with pytest.raises(ValueError):
        outcomes.closing(run(status), **IDS)


def test_segment_end_and_standalone_end_frame_the_closing_event():
    done = run("completed", result=None)
    assert [kind(e) for e in outcomes.segment_end(done, state={"a": 1}, messages=[])] == [
        "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    events = outcomes.standalone_end(run("cancelled"))
    assert [kind(e) for e in events] == ["RUN_STARTED", "RUN_FINISHED"]
    assert events[0].run_id == events[1].run_id


def test_rebuilt_thread_uses_the_clients_ids():
    events = outcomes.rebuilt(run("completed", result=1), thread_id="client-t", run_id="client-r",
                              messages=[], state={})
    assert [kind(e) for e in events] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT",
                                         "RUN_FINISHED"]
    assert {(e.thread_id, e.run_id) for e in (events[0], events[-1])} == {("client-t",
                                                                           "client-r")}

"""Published events are relayed as stored: the publisher's JSON is the encoder's."""

from __future__ import annotations

import json

from ag_ui.encoder import EventEncoder

from agui import events as ev
from agui.relay import Wire
from streams.publish import wire


def test_the_stored_json_is_what_the_encoder_writes():
    encoder = EventEncoder()
    samples = [ev.run_started(thread_id="t", run_id="r"), ev.text_start("m"),
               ev.text_content("m", "héllo \"quoted\" 😀 </script>"), ev.text_end("m"),
               ev.step_started("ask"), ev.tool_call_start("c1", "search", "m"),
               ev.run_error(message="boom", code="agent_error"),
               ev.run_finished_success(thread_id="t", run_id="r", result={"n": [1, None]}),
               ev.state_snapshot({"topic": "x", "trace": []})]
    for event in samples:
        assert encoder.encode(event) == f"data: {wire(event)}\n\n"


def test_a_relayed_event_keeps_its_json_and_only_run_events_get_the_clients_ids():
    stored = wire(ev.text_content("m", "déjà vu"))
    relayed = Wire.of(stored)
    assert (relayed.type, relayed.data) == ("TEXT_MESSAGE_CONTENT", stored)
    start = Wire.of(wire(ev.run_started(thread_id="our-thread", run_id="our-run")))
    body = json.loads(start.with_ids(thread_id="client-thread", run_id="client-run"))
    assert (body["type"], body["threadId"], body["runId"]) == (
        "RUN_STARTED", "client-thread", "client-run")
    # Stored as an object (django-eventstream's own send_event) is relayed too.
    assert Wire.of({"type": "STEP_STARTED", "stepName": "é"}).data == (
        '{"type":"STEP_STARTED","stepName":"é"}')


def test_the_relay_reads_the_type_where_the_publisher_puts_it():
    samples = [ev.run_started(thread_id="t", run_id="r"), ev.text_content("m", '"type":"X"'),
               ev.step_finished("ask"), ev.state_snapshot({"type": "CUSTOM", "x": 1}),
               ev.run_finished_success(thread_id="t", run_id="r", result=None),
               ev.tool_call_result("id", "call", '{"type":"RAW"}')]
    for event in samples:
        data = wire(event)
        assert data.startswith('{"type":"')  # the fast path is the one taken
        assert Wire.of(data).type == json.loads(data)["type"]
    # JSON written by someone else (spaces, another key first) is parsed.
    assert Wire.of('{ "type": "STEP_STARTED", "stepName": "a"}').type == "STEP_STARTED"
    assert Wire.of('{"stepName": "a", "type": "STEP_FINISHED"}').type == "STEP_FINISHED"
    assert Wire.of('{"type":"Odd\\u0041","x":1}').type == "OddA"

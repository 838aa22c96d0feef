"""The edge forwarder's ZeroMQ publish (streams.edge.ZmqPublisher): each item is one
message, ``J`` + the item as JSON (what Pushpin's ``push_in_spec`` reads), and a proxy
that takes nothing fills a bounded queue, past which items are dropped and counted, the
forwarder never waiting. Pushpin itself reading them: tests/edge/test_edge_publish.py."""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor

import pytest
import zmq

from agentsite.processes import free_port, zmq_push_uri
from streams import edge


def _run(coroutine):
    # In a thread of its own: an earlier test (the browser tests' Playwright) may leave
    # an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


BODY = {"channel": "run-1", "event_type": "message", "data": {"type": "CUSTOM"},
        "pub_id": 7}


def test_each_item_is_one_json_message_pushpin_reads():
    port = free_port()
    context = zmq.Context()
    pull = context.socket(zmq.PULL)
    pull.bind(zmq_push_uri(port))
    publisher = edge.ZmqPublisher(zmq_push_uri(port))
    try:
        items = [edge.item(BODY), edge.item({**BODY, "pub_id": 8})]
        assert _run(publisher.send(items)) == 2
        assert pull.poll(5000)
        got = [pull.recv(), pull.recv()]
        assert [g[:1] for g in got] == [b"J", b"J"]
        assert [json.loads(g[1:]) for g in got] == items
        assert items[0]["channel"] == "events-run-1" and items[0]["id"] == "7"
        assert items[0]["prev-id"] == "6"
    finally:
        _run(publisher.close())
        pull.close()
        context.term()


def test_a_proxy_that_takes_nothing_costs_a_bounded_queue_then_drops(monkeypatch, caplog):
    monkeypatch.setattr(edge, "ZMQ_QUEUE", 10)
    publisher = edge.ZmqPublisher(zmq_push_uri(free_port()))  # nothing listens there
    try:
        items = [edge.item({**BODY, "pub_id": n}) for n in range(1, 26)]
        with caplog.at_level(logging.WARNING, logger="streams.edge"):
            sent = _run(asyncio.wait_for(publisher.send(items), 2))
        assert 0 < sent < len(items)
        assert f"{len(items) - sent} left to its recovery" in caplog.text
    finally:
        _run(publisher.close())


@pytest.mark.parametrize("push_uri, kind", [("", edge.HttpPublisher),
                                            ("tcp://127.0.0.1:1", edge.ZmqPublisher)])
def test_the_setting_picks_the_publisher(push_uri, kind):
    forwarder = edge.Forwarder("http://127.0.0.1:1/", {}, push_uri=push_uri)
    assert isinstance(forwarder.publisher, kind)
    _run(forwarder.publisher.close())

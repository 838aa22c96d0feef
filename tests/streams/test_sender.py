"""Publishing without waiting for Redis (streams.publish._Sender): answers are read
later, yet events keep their order, a refused publish is logged, a connection that
broke while quiet is replaced without losing the send, and a thread that ends leaves
its connections to the next one."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid

import pytest
import redis
from django.conf import settings

from agui.events import step_started
from streams import publish
from streams.keys import counter_key, event_key, run_channel
from tests.helpers import published_events


@pytest.fixture
def sender():
    publish.close_connections()  # the next send makes its own
    yield
    publish.wait_published()
    publish.close_connections()


def test_many_sends_keep_their_order_and_are_read_in_batches(sender):
    run_id = str(uuid.uuid4())
    n = publish._READ_EVERY * 2 + 5
    for i in range(n):
        publish.publish(run_id, [step_started(f"s{i}")])
    # Read in batches: only the answers of the last few sends are still to read.
    assert 0 < publish._sender().unread < publish._READ_EVERY
    assert [e["stepName"] for e in published_events(run_id)] == [f"s{i}" for i in range(n)]
    assert publish._sender().unread == 0


def test_a_refused_publish_is_logged_when_read_and_the_next_goes_on(sender, caplog):
    broken, fine = str(uuid.uuid4()), str(uuid.uuid4())
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    r.set(counter_key(run_channel(broken)), "not a number")  # the script's INCRBY fails
    publish.publish(fine, [step_started("warm")])  # not quiet any more: nothing waited for
    with caplog.at_level(logging.WARNING, logger="streams.publish"):
        publish.publish(broken, [step_started("lost")])  # no error here
        publish.publish(fine, [step_started("after")])
        publish.wait_published()
    assert "the event store refused a publish" in caplog.text
    assert [e["stepName"] for e in published_events(fine)] == ["warm", "after"]
    r.delete(counter_key(run_channel(broken)))


def test_a_connection_broken_while_quiet_is_replaced_and_the_send_goes(sender, monkeypatch):
    run_id = str(uuid.uuid4())
    publish.publish(run_id, [step_started("before")])
    publish.wait_published()
    ours = publish._sender().client.client_id()
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    assert r.client_kill_filter(_id=ours) == 1  # as a Redis restart would
    monkeypatch.setattr(publish, "_QUIET_SECONDS", 0.0)  # the next send waits for its answer
    publish.publish(run_id, [step_started("after")])
    assert [e["stepName"] for e in published_events(run_id)] == ["before", "after"]
    assert publish._sender().client.client_id() != ours
    stored = json.loads(r.get(event_key(run_channel(run_id), 2)))
    assert json.loads(stored["data"])["stepName"] == "after"


def _in_a_thread(func):
    out = []
    thread = threading.Thread(target=lambda: out.append(func()))
    thread.start()
    thread.join()
    return out[0]


def test_a_thread_that_ends_leaves_its_connections_to_the_next(sender):
    run_id = str(uuid.uuid4())

    def publish_and_read():
        publish.publish(run_id, [step_started("x")])
        publish.wait_published()
        return publish._sender().client.client_id(), publish.redis_client().client_id()

    first = _in_a_thread(publish_and_read)
    assert len(set(first)) == 2  # a publishing connection and a reading one
    assert _in_a_thread(publish_and_read) == first  # the same two, not new ones
    assert [e["stepName"] for e in published_events(run_id)] == ["x", "x"]


def test_spares_beyond_the_limit_are_closed(sender, monkeypatch):
    monkeypatch.setattr(publish, "_SPARE_MAX", 1)
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    before = {c["id"] for c in r.client_list()}
    gate, done = threading.Barrier(3), []

    def publish_together():  # three threads alive at once: three connections
        publish.publish(str(uuid.uuid4()), [step_started("x")])
        publish.wait_published()
        done.append(publish._sender().client.client_id())
        gate.wait()

    threads = [threading.Thread(target=publish_together) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(done)) == 3
    assert len(publish._spare_senders) == 1
    spare = publish._spare_senders[0].client.client_id()

    def still_open() -> set[int]:
        return ({int(c["id"]) for c in r.client_list()} - {int(i) for i in before}) & set(done)

    # Redis drops a closed client from its list once it has read the close: a moment.
    deadline = time.monotonic() + 5
    while still_open() != {spare} and time.monotonic() < deadline:
        time.sleep(0.05)
    assert still_open() == {spare}  # the other two were closed

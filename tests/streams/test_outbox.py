"""On-commit publishing (streams.publish): a transaction's events and notices go out
together after its commit; a rolled-back transaction or savepoint publishes nothing."""

from __future__ import annotations

import json
import uuid

import pytest
import redis
from django.conf import settings
from django.db import transaction

from agui.events import run_error, step_started
from streams.keys import counter_key, event_key, run_channel, user_channel
from streams.publish import notify_user_on_commit, publish_on_commit, wait_published
from tests.helpers import published_events


def _notices(user_id: int) -> list[dict]:
    wait_published()
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    channel = user_channel(user_id)
    return [json.loads(json.loads(r.get(event_key(channel, i)))["data"])
            for i in range(1, int(r.get(counter_key(channel)) or 0) + 1)]


@pytest.fixture
def user_id() -> int:
    return 10_000_000 + uuid.uuid4().int % 1_000_000  # a channel no other test uses


def test_events_and_notices_of_a_transaction_go_out_after_commit(transactional_db, user_id):
    run_id = str(uuid.uuid4())
    with transaction.atomic():
        events = publish_on_commit(run_id, [step_started("a")])
        notify_user_on_commit(user_id, {"type": "interrupts_changed", "run_id": run_id})
        events.append(step_started("b"))  # added later, still in the batch
        assert published_events(run_id) == [] and _notices(user_id) == []
    assert [e["stepName"] for e in published_events(run_id)] == ["a", "b"]
    assert _notices(user_id) == [{"type": "interrupts_changed", "run_id": run_id}]


def test_a_rolled_back_transaction_publishes_nothing_and_the_next_one_does(
        transactional_db, user_id):
    run_id = str(uuid.uuid4())
    with pytest.raises(ValueError), transaction.atomic():
        publish_on_commit(run_id, [step_started("lost")])
        raise ValueError
    with transaction.atomic():
        notify_user_on_commit(user_id, {"type": "x"})
        publish_on_commit(run_id, [step_started("kept")])
    assert [e["stepName"] for e in published_events(run_id)] == ["kept"]
    assert _notices(user_id) == [{"type": "x"}]


def test_a_rolled_back_savepoint_takes_its_events_only(transactional_db):
    run_id = str(uuid.uuid4())
    with transaction.atomic():
        publish_on_commit(run_id, [step_started("outer")])
        try:
            with transaction.atomic():
                publish_on_commit(run_id, [step_started("inner, rolled back")])
                raise ValueError
        except ValueError:
            pass
        with transaction.atomic():
            publish_on_commit(run_id, [step_started("inner, kept")])
        publish_on_commit(run_id, [run_error(message="end", code="x")])
    # In the order published: the last event stays last.
    assert [e.get("stepName", e["type"]) for e in published_events(run_id)] == [
        "outer", "inner, kept", "RUN_ERROR"]


def test_outside_a_transaction_it_publishes_at_once(transactional_db, user_id):
    run_id = str(uuid.uuid4())
    publish_on_commit(run_id, [step_started("now")])
    notify_user_on_commit(user_id, {"type": "now"})
    assert [e["stepName"] for e in published_events(run_id)] == ["now"]
    assert _notices(user_id) == [{"type": "now"}]


def test_published_together_sends_one_batch_on_commit_and_nothing_on_rollback(
        transactional_db, user_id):
    from streams.publish import published_together, run_ended_on_commit

    run_id = str(uuid.uuid4())
    with pytest.raises(ValueError), transaction.atomic(), published_together():
        publish_on_commit(run_id, [step_started("lost")])
        notify_user_on_commit(user_id, {"type": "lost"})
        raise ValueError
    with transaction.atomic(), published_together():
        events = publish_on_commit(run_id, [step_started("a")])
        notify_user_on_commit(user_id, {"type": "interrupts_changed", "run_id": run_id})
        run_ended_on_commit(run_id)
        events.append(step_started("b"))
        assert published_events(run_id) == [] and _notices(user_id) == []
    assert [e["stepName"] for e in published_events(run_id)] == ["a", "b"]
    assert _notices(user_id) == [{"type": "interrupts_changed", "run_id": run_id}]
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    assert 0 < r.ttl(counter_key(run_channel(run_id)))  # the run's counter now expires
    with pytest.raises(RuntimeError):  # outside a transaction it would send at once
        with published_together():
            pass

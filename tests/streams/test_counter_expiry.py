"""A run's event counter (the last id given out on its channel) lasts while the run can
still publish, and then expires with its events, instead of staying in Redis forever."""

from __future__ import annotations

import io
import uuid

import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.db import transaction

from agui.events import run_error, step_started
from runs.models import AgentRun, Conversation
from streams.keys import counter_key, run_channel
from streams.publish import publish, publish_on_commit, run_ended_on_commit
from tests.helpers import counter_expires_with_events, counter_ttl, published_events

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_ended_runs_counter_expires_with_its_events():
    run_id = str(uuid.uuid4())
    with transaction.atomic():
        publish_on_commit(run_id, [step_started("a")])
        assert counter_ttl(run_id) == -2
    assert counter_ttl(run_id) == -1  # a run that has not ended keeps its ids
    with transaction.atomic():
        publish_on_commit(run_id, [run_error(message="end", code="x")])
        run_ended_on_commit(run_id)
        assert counter_ttl(run_id) == -1  # not before the commit
    assert counter_expires_with_events(run_id)
    # Published after the end (a live segment closing its AG-UI run): ids go on, and the
    # counter still expires.
    publish(run_id, [step_started("late")])
    assert [e.get("stepName", e["type"]) for e in published_events(run_id)] == [
        "a", "RUN_ERROR", "late"]
    assert counter_expires_with_events(run_id)


def test_an_end_before_any_event_still_expires_the_counter():
    run_id = str(uuid.uuid4())
    with transaction.atomic():
        run_ended_on_commit(run_id)
    assert counter_expires_with_events(run_id)  # made at 0, expiring
    with transaction.atomic():
        publish_on_commit(run_id, [step_started("after")])
    assert [e["stepName"] for e in published_events(run_id)] == ["after"]  # id 1
    assert counter_expires_with_events(run_id)


def test_an_end_in_a_rolled_back_savepoint_is_undone():
    run_id = str(uuid.uuid4())
    with transaction.atomic():
        publish_on_commit(run_id, [step_started("a")])
        try:
            with transaction.atomic():
                run_ended_on_commit(run_id)
                raise ValueError
        except ValueError:
            pass
    assert counter_ttl(run_id) == -1


def test_the_command_expires_the_counters_of_runs_ended_before_upgrading(users):
    """Counters kept by an older version: only those of runs this database knows ended."""
    conversation = Conversation.objects.create(owner=users["owner"], agent="dev")
    runs = {status: AgentRun.objects.create(
        owner=users["owner"], conversation=conversation, agent="dev", agent_version="1",
        thread_id=str(uuid.uuid4()), status=status) for status in ("completed", "paused")}
    other = uuid.uuid4()  # not in this database: maybe another deployment's run
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    for run_id in (runs["completed"].id, runs["paused"].id, other):
        r.set(counter_key(run_channel(run_id)), 7)
    out = io.StringIO()
    call_command("expire_event_counters", stdout=out)
    assert counter_expires_with_events(str(runs["completed"].id))
    assert counter_ttl(str(runs["paused"].id)) == -1
    assert counter_ttl(str(other)) == -1
    assert r.get(counter_key(run_channel(runs["completed"].id))) == b"7"  # ids unchanged
    assert "counters of ended runs now expire" in out.getvalue()

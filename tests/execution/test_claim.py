"""The claim of a segment under a lease (in-process, on the test database): a live lease
keeps its segment; a lapsed one is taken over as the same segment, as often as needed,
and the first segment's takeover carries its initial input."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from execution import lifecycle
from execution.reaper import owed_work, sweep
from runs.models import AgentRun
from runs.services import run_start

pytestmark = pytest.mark.django_db


def _lapse(run_id: str) -> None:
    AgentRun.objects.filter(pk=run_id).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1))


def test_live_lease_keeps_its_segment_lapsed_one_is_taken_over_again_and_again(
        users, unconsumed_queue):
    run = run_start(owner=users["owner"], agent="dev", input={"topic": "claim"})
    first = lifecycle.run_claim(run_id=str(run.pk), segments_done=0, worker="w1")
    assert first is not None and not first.takeover and first.initial_state is not None
    # A duplicate delivery, and a takeover while the lease is alive (slow, not dead): no.
    assert lifecycle.run_claim(run_id=str(run.pk), segments_done=0, worker="w2") is None
    assert lifecycle.lease_renew(first)

    previous = first
    for worker in ("w2", "w3"):  # lapses twice: each takeover is still segment 1
        _lapse(run.pk)
        taken = lifecycle.run_claim(run_id=str(run.pk), segments_done=0, worker=worker)
        assert taken is not None and taken.takeover and taken.lease != previous.lease
        # The first segment taken over still has its input (no EmptyInputError).
        assert taken.initial_state == first.initial_state
        assert AgentRun.objects.get(pk=run.pk).segments == 1
        # The lost claim can neither renew nor end the segment.
        assert not lifecycle.lease_renew(previous)
        assert lifecycle.run_pause(segment=previous, interrupts_raised=[], text="",
                                   state={}) is None
        previous = taken
    # Its own retry takes the segment back at once, lease alive or not.
    again = lifecycle.run_claim(run_id=str(run.pk), segments_done=0, lease=previous.lease)
    assert again is not None and again.takeover
    statuses = list(run.audit_log.values_list("to_status", flat=True))
    assert statuses == ["queued", "running"]  # takeovers write no status change


def test_reaper_sends_runs_owed_work(users, settings, unconsumed_queue):
    settings.AGENTSITE_REQUEUE_AFTER_SECONDS = 0
    run = run_start(owner=users["owner"], agent="dev", input={"topic": "owed"})
    later = timezone.now() + timedelta(seconds=1)
    assert list(owed_work(later)) == [run]
    claimed = lifecycle.run_claim(run_id=str(run.pk), worker="w1")
    assert list(owed_work(later)) == []  # running under a live lease
    _lapse(run.pk)
    queue = redis.Redis(**settings.EVENTSTREAM_REDIS)
    before = queue.llen(unconsumed_queue)
    assert sweep() == [str(run.pk)]
    assert queue.llen(unconsumed_queue) == before + 1  # the task, sent again
    after = AgentRun.objects.get(pk=run.pk)
    assert after.lease_owner == "" and after.lease_expires_at > timezone.now()
    assert sweep() == []  # released: sent once per lease, not on every sweep
    assert lifecycle.run_claim(run_id=str(run.pk), segments_done=0, worker="w2").takeover
    assert claimed.lease != AgentRun.objects.get(pk=run.pk).lease_owner

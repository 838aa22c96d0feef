"""One thread renews every lease the process holds (issue 37: no thread per segment).

Three segments claimed on the test database hold their leases through a short
``LEASE_SECONDS``; one taken over meanwhile is told it is lost, the others are not.
"""

from __future__ import annotations

import threading
import time

import pytest

from execution import lifecycle
from execution.reaper import Heartbeat
from runs.models import AgentRun
from runs.services import run_start

pytestmark = pytest.mark.django_db(transaction=True)


def _lease_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if "lease" in t.name]


def test_one_thread_renews_every_held_lease(users, unconsumed_queue, settings) -> None:
    settings.AGENTSITE_LEASE_SECONDS = 0.6  # renewed every 0.2 s
    segments = []
    for n in range(3):
        run = run_start(owner=users["owner"], agent="dev", input={"topic": f"lease {n}"})
        segment = lifecycle.run_claim(run_id=str(run.pk), worker="renewer")
        assert segment is not None
        segments.append(segment)
    claimed = {s.run_id: AgentRun.objects.get(pk=s.run_id).lease_expires_at for s in segments}
    beats = [Heartbeat(s) for s in segments]
    for beat in beats:
        beat.start()
    try:
        assert len(_lease_threads()) == 1, _lease_threads()
        # A takeover: the first segment's run now runs on another lease.
        AgentRun.objects.filter(pk=segments[0].run_id).update(lease_owner="other/lease")
        assert beats[0].lost.wait(5), "the superseded segment was not told"
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            renewed = {s.run_id for s in segments[1:]
                       if AgentRun.objects.get(pk=s.run_id).lease_expires_at > claimed[s.run_id]}
            if len(renewed) == 2:
                break
            time.sleep(0.05)
        assert len(renewed) == 2, "the leases still held were not renewed"
        assert not any(beat.lost.is_set() for beat in beats[1:])
    finally:
        for beat in beats:
            beat.stop()
    assert len(_lease_threads()) <= 1

"""A run failed by another process while its segment still streams (a delivery of the
run's task whose claim kept failing fails it with no segment of its own): the segment's
events from then on are dropped by the event store, so the run's AG-UI log ends with the
failure's RUN_ERROR and nothing after it. A real claim on the test database, the real
failure service and the real event store; the segment publishes as the executor does
(fenced by its lease)."""

from __future__ import annotations

import pytest

from agui.events import step_finished, step_started, text_content, text_start
from execution import lifecycle
from runs.models import AgentRun
from runs.services import run_start
from streams.publish import publish
from tests.agui_rules import validate_events
from tests.helpers import published_events

pytestmark = pytest.mark.django_db(transaction=True)


def test_events_of_a_segment_whose_run_failed_meanwhile_are_dropped(users, unconsumed_queue):
    run = run_start(owner=users["owner"], agent="dev", input={"topic": "late"})
    segment = lifecycle.run_claim(run_id=str(run.pk), segments_done=0, worker="w1")
    assert segment is not None
    fence = ("check", segment.lease)
    # The segment's RUN_STARTED went out with the claim's fence.
    publish(run.pk, [step_started("ask_name"), text_start("m1")], fence=fence)

    assert lifecycle.run_fail(run_id=str(run.pk), error="infrastructure failure: gone",
                              code="infrastructure_error") is not None
    # The segment has not heard yet (its next heartbeat or step would tell it).
    publish(run.pk, [text_content("m1", "late"), step_finished("ask_name")], fence=fence)

    (only,) = validate_events(published_events(str(run.pk)))
    assert [e["type"] for e in only] == ["RUN_STARTED", "STEP_STARTED",
                                         "TEXT_MESSAGE_START", "TEXT_MESSAGE_END",
                                         "STEP_FINISHED", "RUN_ERROR"]
    assert AgentRun.objects.get(pk=run.pk).status == "failed"

"""Events are recoverable, business state is not: with the event store unreachable, a
segment still pauses and finishes (its events are lost and logged; connect rebuilds
them from the database), and nothing raises into the worker."""

from __future__ import annotations

import pytest

from execution import lifecycle
from execution.lifecycle import PendingInterrupt
from hitl.models import AgentInterrupt
from runs.models import AgentRun
from runs.services import run_start
from streams import publish

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def events_unreachable(settings, unconsumed_queue):
    """The event store on a port nothing listens on (sends go to ``unconsumed_queue``)."""
    settings.EVENTSTREAM_STORAGE_CONNECTION = {"host": "127.0.0.1", "port": 1}
    publish.close_connections()  # made again from the settings, not taken from spares
    yield
    publish.close_connections()


def test_pause_and_finish_commit_when_publishing_fails(users, events_unreachable, caplog):
    run = run_start(owner=users["owner"], agent="dev", input={"topic": "p"})
    segment = lifecycle.run_claim(run_id=str(run.pk), worker="w")
    paused = lifecycle.run_pause(
        segment=segment, text="asked",
        interrupts_raised=[PendingInterrupt("a" * 32, {"type": "input", "message": "q"})],
        state={})
    assert paused is not None and AgentRun.objects.get(pk=run.pk).status == "paused"
    assert AgentInterrupt.objects.get(run=run).status == "pending"

    other = run_start(owner=users["owner"], agent="dev", input={"topic": "f"})
    segment = lifecycle.run_claim(run_id=str(other.pk), worker="w")
    finished = lifecycle.run_finish(segment=segment, status="completed", result={"ok": 1},
                                    text="done", state={})
    assert finished is not None
    assert AgentRun.objects.get(pk=other.pk).status == "completed"
    cancelled = lifecycle.run_cancel(actor=users["owner"], run_id=run.pk)
    assert cancelled.status == "cancelled"
    # The publishes were tried, failed and were logged.
    assert "in on_commit()" in caplog.text and "Connection refused" in caplog.text

"""The run's lock reads its interrupts in the lock's own statement (``runs.sql.run_lock``,
``related``; issue 37). One statement reads in one snapshot, taken before the lock is
granted: what the holder it waited for committed must still be seen.

- An answer the holder recorded without touching the run's row (one question of two):
  the questions are locked in that statement too, so they are read as their latest
  version, and a second answer to the same question is refused (409).
- A question the holder added (with the run's row changed, as a pause does): the lock
  sees that its row changed after the snapshot and reads the questions again.

Deterministic: the test holds the run's row lock until the other session waits on it."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from agentsite.errors import Conflict
from execution.lifecycle import interrupts_answer
from hitl.decide import Answer
from hitl.models import AgentInterrupt
from hitl.sql import DECIDING, UNAPPLIED
from runs.models import AgentRun
from runs.sql import run_lock
from tests.helpers import paused_with

pytestmark = pytest.mark.django_db(transaction=True)

FIRST, SECOND = "a" * 32, "b" * 32


def _paused(owner: Any) -> AgentRun:
    return paused_with(owner, [(FIRST, {"type": "input", "message": "Name it"}),
                               (SECOND, {"type": "input", "message": "Colour?"})])


def _until_waiting(outcome: dict[str, Any]) -> None:
    for _ in range(300):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                           "current_database() AND wait_event_type = 'Lock'")
            if cursor.fetchone()[0] >= 1:
                return
        time.sleep(0.02)
    raise AssertionError(f"nobody waits on the run's lock: {outcome}")


def _in_thread(work: Any) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except Exception as err:  # noqa: BLE001 - the assertions say which
            outcome["value"] = err
        finally:
            connections.close_all()

    return threading.Thread(target=run), outcome


def test_a_second_answer_waiting_on_the_first_sees_it(users, unconsumed_queue) -> None:
    run = _paused(users["owner"])
    second, outcome = _in_thread(lambda: interrupts_answer(
        actor=users["reviewer"], run_id=run.pk, surface="api",
        answers=[Answer(interrupt_id=FIRST, payload={"value": "late"})]))
    with transaction.atomic():
        run_lock(run.pk)  # held: the second answer's statement starts, and waits
        second.start()
        _until_waiting(outcome)
        # The first answer, in the lock's transaction: one question of two, so the run's
        # row does not change (it stays paused).
        interrupts_answer(actor=users["owner"], run_id=run.pk, surface="api",
                          answers=[Answer(interrupt_id=FIRST, payload={"value": "first"})])
    second.join(30)

    refused = outcome["value"]
    assert isinstance(refused, Conflict) and refused.code == "already_decided", refused
    row = AgentInterrupt.objects.get(run=run, interrupt_id=FIRST)
    assert row.decision == {"value": "first"}


def test_a_lock_that_waited_reads_the_questions_added_meanwhile(users) -> None:
    run = _paused(users["owner"])
    added = "c" * 32

    def lock_and_read() -> list[str]:
        with transaction.atomic():
            locked = run_lock(run.pk, related=(DECIDING, UNAPPLIED))
            return sorted(row.interrupt_id for row in locked.interrupts_locked)

    reader, outcome = _in_thread(lock_and_read)
    with transaction.atomic():
        held = run_lock(run.pk)
        reader.start()
        _until_waiting(outcome)
        # As a pause does: a new question, and the run's row changed with it.
        AgentInterrupt.objects.create(id=uuid.uuid4(), run=held, interrupt_id=added,
                                      kind="input", request={"type": "input",
                                                             "message": "More?"})
        AgentRun.objects.filter(pk=run.pk).update(updated_at=timezone.now())
    reader.join(30)

    assert outcome["value"] == sorted([FIRST, SECOND, added])

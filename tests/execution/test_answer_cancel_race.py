"""A cancel that cancels the run (a question with no decline) is one transaction with
the decision: another person's answer queued behind it on the run's lock finds the run
cancelled (409), and is not recorded then thrown away (issue 35, item 23).

Deterministic: the test holds the run's row lock while the canceller, then the other
answer, queue on it (Postgres grants a row's waiters in order), then lets them go."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection, connections, transaction

from agentsite.errors import Conflict
from execution.lifecycle import interrupts_answer
from hitl.decide import Answer
from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from tests.helpers import paused_with

pytestmark = pytest.mark.django_db(transaction=True)

NO_DECLINE = "a" * 32  # a bare string: generic, no decline (cancelling it cancels the run)
INPUT = "b" * 32


def _paused(owner: Any) -> AgentRun:
    return paused_with(owner, [(NO_DECLINE, "Which bucket should I use?"),
                               (INPUT, {"type": "input", "message": "Name it"})])


def _waiting_on_locks() -> int:
    with connection.cursor() as cursor:
        # Asked inside the lock holder's transaction: drop the statistics it has cached.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                       "current_database() AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0]


def _until(count: int, outcomes: dict[str, Any]) -> None:
    for _ in range(300):
        if _waiting_on_locks() >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} sessions wait on the run's lock: {outcomes}")


def test_an_answer_queued_behind_a_run_cancelling_cancel_is_refused(users, unconsumed_queue):
    run = _paused(users["owner"])
    outcomes: dict[str, Any] = {}

    def answer(name: str, actor: Any, item: Answer) -> None:
        try:
            outcomes[name] = interrupts_answer(actor=actor, run_id=run.pk, answers=[item],
                                               surface="page")
        except Exception as err:  # noqa: BLE001 - the assertions below say which
            outcomes[name] = err
        finally:
            connections.close_all()

    cancel = threading.Thread(target=answer, args=(
        "cancel", users["owner"], Answer(interrupt_id=NO_DECLINE, status="cancelled")))
    other = threading.Thread(target=answer, args=(
        "other", users["reviewer"], Answer(interrupt_id=INPUT, payload={"value": "v1"})))
    with transaction.atomic():
        AgentRun.objects.select_for_update().get(pk=run.pk)  # held: both queue on it
        cancel.start()
        _until(1, outcomes)
        other.start()
        _until(2, outcomes)
    cancel.join(30)
    other.join(30)

    assert outcomes["cancel"].status == AgentRun.Status.CANCELLED
    refused = outcomes["other"]
    assert isinstance(refused, Conflict), refused
    assert refused.code in ("run_not_paused", "not_pending")
    rows = {r.interrupt_id: r for r in AgentInterrupt.objects.filter(run=run)}
    assert rows[INPUT].status == "cancelled" and rows[INPUT].decision is None
    assert rows[INPUT].decided_by is None
    # The reviewer's answer left no decision row; the cancel is the owner's, audited
    # with the question that ended the run.
    assert not AuditLog.objects.filter(run=run, action=AuditLog.Action.DECISION).exists()
    end = AuditLog.objects.get(run=run, action=AuditLog.Action.RUN_STATUS,
                               to_status="cancelled")
    assert end.actor_id == users["owner"].pk and end.surface == "page"
    assert end.payload == {"code": "question_cancelled", "interrupt_ids": [NO_DECLINE]}

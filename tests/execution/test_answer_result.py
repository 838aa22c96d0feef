"""``interrupts_answer``, the one answer entry point of every surface, says what the answer
did in a typed result (``Answered``): the run as committed, whether questions are still
open (nothing resumes) and whether a cancel with no decline ended the run."""

from __future__ import annotations

import pytest

from execution.lifecycle import Answered, interrupts_answer
from hitl.decide import Answer
from tests.helpers import paused_with

pytestmark = pytest.mark.django_db(transaction=True)

NO_DECLINE = "c" * 32  # a bare string: generic, no decline (cancelling it cancels the run)
INPUT = "d" * 32


def test_an_answer_says_what_it_did(users, unconsumed_queue):
    run = paused_with(users["owner"], [(NO_DECLINE, "Which bucket?"),
                                       (INPUT, {"type": "input", "message": "Name it"})])
    first = interrupts_answer(actor=users["reviewer"], run_id=run.pk, surface="api",
                              answers=[Answer(interrupt_id=INPUT, payload={"value": "v"})])
    assert isinstance(first, Answered)
    assert first.waiting and not first.run_cancelled and first.status == "paused"
    assert first.run.pk == run.pk
    assert {r.interrupt_id: r.status for r in first.run.interrupt_rows} == {
        NO_DECLINE: "pending", INPUT: "decided"}

    ended = interrupts_answer(actor=users["owner"], run_id=run.pk, surface="page",
                              answers=[Answer(interrupt_id=NO_DECLINE, status="cancelled")])
    assert ended.run_cancelled and not ended.waiting and ended.status == "cancelled"
    assert {r.interrupt_id for r in ended.run.interrupt_rows} == {NO_DECLINE, INPUT}

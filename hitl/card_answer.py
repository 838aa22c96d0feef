"""A card's form post → the answer service → what the card shows next: the chat pages
and the admin decide page answer through here (a surface: it calls
``execution.lifecycle.interrupts_answer``, the one answer entry point of every surface).

Form parsing stays here (``hitl.cards.answer_from_post``); the rules (permissions,
policies, validation, "a cancel with no decline cancels the run") are the service's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentsite.errors import InvalidInput, ServiceError
from agentsite.limits import check_answer_size
from agentsite.parsers import MAX_DEPTH, check_value
from execution.lifecycle import interrupts_answer
from hitl.cards import CardFormError, answer_from_post, late_answer_message
from hitl.decide import Answer
from hitl.models import AgentInterrupt
from hitl.presence import answering_others


@dataclass(frozen=True)
class CardAnswer:
    """What became of a card's post.

    ``errors``: the card's errors by field (empty when recorded); ``status``: the HTTP
    status the refusal means (400: fix the form; 403, 409, 410: the card turns read-only
    and says why); ``keep_values``: show the posted values again; ``run_cancelled``: the
    post cancelled a question with no decline, so the run was cancelled."""

    errors: dict[str, list[str]] = field(default_factory=dict)
    status: int = 200
    keep_values: bool = False
    run_cancelled: bool = False

    @property
    def recorded(self) -> bool:
        return not self.errors


def card_answer(*, actor: Any, interrupt: AgentInterrupt, data: Any,
                surface: str) -> CardAnswer:
    """Answer ``interrupt`` from its card's form post (a QueryDict), as ``actor``.

    Over someone else's soft claim (``hitl.presence``: they are answering it now) the
    first post is a confirmation step: nothing is recorded, the card says who and keeps
    the answer, and its next post (``_over_claim``) goes through; the row lock decides."""
    claim = over_claim(actor=actor, interrupt=interrupt, data=data)
    if claim is not None:
        return claim
    try:
        try:
            status, payload = answer_from_post(interrupt, data)
        except RecursionError:  # a JSON editor's text nested past what json can parse
            raise InvalidInput("nested too deep", fields={
                "payload": [f"JSON is nested deeper than {MAX_DEPTH} levels"]}) from None
        # What the API's JSON parser and serializer refuse, refused here too (a JSON
        # editor's "\u0000", NaN, a 2 MB answer): a 400 on the card, nothing recorded.
        check_value(payload)
        check_answer_size(payload)
        answered = interrupts_answer(actor=actor, run_id=interrupt.run_id, surface=surface,
                                answers=[Answer(interrupt_id=interrupt.interrupt_id,
                                                status=status, payload=payload)])
    except CardFormError as err:
        return CardAnswer(errors=err.fields, status=400, keep_values=True)
    except InvalidInput as err:
        return CardAnswer(errors=err.fields or {"__all__": [err.detail]}, status=400,
                          keep_values=True)
    except ServiceError as err:
        # Someone answered first, the run moved on, the deadline passed, or a policy
        # (four-eyes, assignment) refuses: read the row again to say who and what.
        interrupt.refresh_from_db(fields=["status", "decided_by", "decided_at", "decision"])
        return CardAnswer(errors={"__all__": [late_answer_message(interrupt, err, actor)]},
                          status=err.status)
    return CardAnswer(run_cancelled=answered.run_cancelled)


def over_claim(*, actor: Any, interrupt: AgentInterrupt, data: Any) -> CardAnswer | None:
    """The confirmation step of an answer over others' soft claim, or None (no claim, or
    confirmed). ``claim`` errors put the confirming field in the card's form."""
    if data.get("_over_claim") == "1" or data.get("_status") == "cancelled":
        return None
    others = answering_others(interrupt.run_id, interrupt.interrupt_id, actor)
    if not others:
        return None
    who = ", ".join(others)
    return CardAnswer(errors={"claim": [
        f"{who} {'is' if len(others) == 1 else 'are'} answering this question right now. "
        "Send your answer again to answer it anyway: the first answer to arrive is the one "
        "taken."]}, status=409, keep_values=True)

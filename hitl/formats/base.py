"""The interface every interrupt format implements (see ``hitl.formats``).

A format wraps one raw interrupt value, exactly as the graph raised it (any JSON value),
with the ``response_schema`` LangGraph gave it. Everything a surface does with an
interrupt goes through it: the question line, the answer's JSON Schema, validating an
answer, the exact resume value, the value a cancel resumes with, quorum votes, standing
approvals, the card and its form post. No surface looks at ``kind`` or ``type`` itself.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, NamedTuple

from hitl.kinds import refuse
from hitl.schema_errors import by_field


class _CancelsRun:
    """The type of ``CANCELS_RUN`` (one instance)."""

    def __repr__(self) -> str:
        return "CANCELS_RUN"


# ``cancelled_value()`` of a format with no decline the graph accepts (a pydantic
# response_schema refuses None; a call that only allows approve): cancelling the question
# cancels the run instead of resuming it (``hitl.decide.CancelsRun``).
CANCELS_RUN: Any = _CancelsRun()

MESSAGE_MAX = 300  # characters of the question line (lists, audit, AG-UI message)
SUMMARY_MAX = 200


class CardFormError(Exception):
    """A card form post that cannot become an answer; ``fields`` maps field names to
    messages."""

    def __init__(self, fields: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {', '.join(v)}" for k, v in fields.items()))
        self.fields = fields


class Vote(NamedTuple):
    """An answer read as a quorum vote."""

    approved: bool
    reason: str = ""


class Subject(NamedTuple):
    """What a standing approval may match: ``kind`` is a ``StandingApproval.Kind``
    ("approval", "review", "tool"), ``tool`` the tool's name for "tool", ``args`` what
    ``args_match`` is compared with."""

    kind: str
    tool: str | None = None
    args: Any = None


class CallDecision(NamedTuple):
    """What was decided for one tool call a question asked about: ``decision`` is
    "approve", "edit", "reject" or "respond"; ``args`` the call's as the agent asked them,
    ``ran_args`` the edited ones (an edit); ``tool_call_id`` when the question names it."""

    name: str
    args: Any
    decision: str
    ran_args: Any = None
    tool_call_id: str | None = None


class Edit(NamedTuple):
    """Something an answer edited, beside what the agent asked: ``original`` and
    ``edited`` are JSON values, the titles say which is which."""

    original_title: str
    edited_title: str
    original: Any
    edited: Any


def clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def short_json(value: Any, limit: int = SUMMARY_MAX) -> str:
    if isinstance(value, str):
        return clip(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return clip(text, limit)


class InterruptFormat:
    """One interrupt value in one format. Subclasses set the class attributes and
    override what differs; the defaults suit a value answered with any JSON."""

    name: ClassVar[str]  # stored in AgentInterrupt.kind (<= 40 characters)
    label: ClassVar[str]  # what people call it ("Tool approval", "Question", ...)
    template: ClassVar[str]  # "hitl/cards/<file>.html", shared by the pages and the admin
    bulk_approve: ClassVar[bool] = False  # the admin's "approve selected" applies
    quorum: ClassVar[bool] = False  # answers can be approve / reject votes (``vote``)

    def __init__(self, value: Any, response_schema: dict[str, Any] | None = None,
                 args_schemas: dict[str, Any] | None = None) -> None:
        self.value = value
        self.schema = response_schema if isinstance(response_schema, dict) else None
        # The argument schema of each tool the value names, by tool name, as the worker
        # found them on the graph's tools (``tools()``); {} when none is known.
        self.args_schemas = {k: v for k, v in (args_schemas or {}).items()
                             if isinstance(v, dict)} if isinstance(args_schemas, dict) else {}

    @classmethod
    def recognise(cls, value: Any, response_schema: dict[str, Any] | None) -> bool:
        raise NotImplementedError

    # --- showing -------------------------------------------------------------------------
    def message(self) -> str:
        """The question line shown everywhere (lists, audit, cards, AG-UI message)."""
        return ""

    def reason(self) -> str:
        """AG-UI ``Interrupt.reason``."""
        return "input_required"

    def tools(self) -> list[str]:
        """Tools whose argument schema the worker should store with the question (see
        ``args_schemas``): those an answer may edit and the value does not describe."""
        return []

    def tool_call_id(self) -> str | None:
        """The tool call this interrupt is about (AG-UI ``Interrupt.toolCallId``)."""
        return None

    def response_schema(self) -> dict[str, Any]:
        """JSON Schema of the answer (REST ``response_schema``, AG-UI ``responseSchema``)."""
        return self.schema or {}

    def call_decisions(self, answer: Any) -> list[CallDecision]:
        """The tool calls this question gated and what ``answer`` decided for each (the
        chat page's tool chips: a rejected call did not run, an edited one ran with
        other arguments); [] for a question about no tool call."""
        return []

    def edits(self, answer: Any) -> list[Edit]:
        """What ``answer`` edited, each beside the original (the admin's decide page): by
        default each tool call that ran with edited arguments (``call_decisions``)."""
        return [Edit(f"{call.name}: the arguments the agent asked for",
                     f"{call.name}: the arguments it ran with", call.args, call.ran_args)
                for call in self.call_decisions(answer)
                if call.decision == "edit" and call.ran_args is not None]

    def summary(self, answer: Any) -> str:
        """One line saying what was answered (lists, the audit)."""
        return short_json(answer)

    # --- answering -----------------------------------------------------------------------
    def validate(self, answer: Any) -> Any:
        """The clean answer, or InvalidAnswer naming the fields in error."""
        if self.schema:
            fields = by_field(self.schema, answer)
            if fields:
                raise refuse(self.label.lower(), fields)
        return answer

    def resume_value(self, answer: Any) -> Any:
        """Exactly what ``Command(resume=...)`` gives the graph for this (clean) answer."""
        return answer

    def cancelled_value(self) -> Any:
        """The resume value when the person declines the question (AG-UI "cancelled");
        ``CANCELS_RUN`` (here, for a format with no decline: ``schema_form``, ``generic``)
        when the run is cancelled instead."""
        return CANCELS_RUN

    def approve_answer(self, because: str = "") -> Any | None:
        """The answer a plain "approve" is (bulk approve, standing approvals, a settled
        quorum; ``because``: why, where the answer can say it); None when the format has
        no plain approve."""
        return None

    def reject_answer(self, reason: str = "") -> Any | None:
        """The answer a plain "reject" is (a quorum settled against); None: none."""
        return None

    def vote(self, answer: Any) -> Vote | None:
        """A clean answer read as a quorum vote; None: not an approve / reject."""
        return None

    def quorum_answer(self, approved: bool, votes: list[dict[str, Any]]) -> Any:
        """The answer stored when a quorum's votes settle it (``votes``: user, approved,
        reason)."""
        reasons = "; ".join(v["reason"] for v in votes if not v["approved"] and v["reason"])
        return self.approve_answer() if approved else self.reject_answer(reasons)

    def subjects(self) -> list[Subject]:
        """What standing approvals may match; the interrupt is answered with
        ``approve_answer()`` when a rule matches every subject ([]: never)."""
        return []

    # --- the graph's own policy and deadline (only our ``hitl_*`` helpers send them) ------
    def policy(self) -> dict[str, Any]:
        return {}

    def expires_at(self) -> str | None:
        return None

    # --- the card ------------------------------------------------------------------------
    def card_context(self, answer: Any | None, posted: dict[str, Any] | None) -> dict[str, Any]:
        """What the card template shows besides the common frame. ``inline_errors``, when
        given: the form names the template shows errors beside, in the order the focus
        goes to the first in error after a refused answer (``hitl.cards``)."""
        return {"value": self.value, "response_schema": self.response_schema(),
                "answer": answer, "posted": posted or {}}

    def answer_from_post(self, data: Any) -> Any:
        """A card's form post (a QueryDict) as an answer; CardFormError when the form
        cannot say it (the answer itself is checked by ``validate``)."""
        text = data.get("answer_json")
        if text is not None and text.strip():
            try:
                return json.loads(text)
            except ValueError as err:
                raise CardFormError({"answer_json": [f"not valid JSON: {err}"]}) from None
        raise CardFormError({"answer_json": ["write an answer"]})

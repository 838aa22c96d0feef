"""Our seven interaction kinds (``hitl.ask``'s helpers), unchanged on the wire: every
method delegates to the request / response models of ``hitl.kinds``."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ValidationError

from hitl import kinds
from hitl.formats.base import MESSAGE_MAX, InterruptFormat, Subject, Vote, clip


class OurKind(InterruptFormat):
    """A request built by a ``hitl_*`` helper: ``{"type": <kind>, "message": ..., ...}``."""

    @classmethod
    def recognise(cls, value: Any, response_schema: dict[str, Any] | None) -> bool:
        if not (isinstance(value, dict) and value.get("type") == cls.name):
            return False
        try:
            kinds.parse_request(value)
        except (ValidationError, TypeError, ValueError):
            return False  # shaped like ours but not one: shown as a generic value
        return True

    @property
    def request(self) -> dict[str, Any]:
        return self.value if isinstance(self.value, dict) else {}

    def message(self) -> str:
        r = self.request
        return clip(str(r.get("message") or r.get("title") or ""), MESSAGE_MAX)

    def reason(self) -> str:
        if self.request.get("reason"):
            return str(self.request["reason"])
        return "input_required"

    def response_schema(self) -> dict[str, Any]:
        return kinds.response_schema(self.request)

    def validate(self, answer: Any) -> Any:
        return kinds.validate_response(self.request, answer)

    def cancelled_value(self) -> Any:
        # ``hitl.ask`` reads it: an approval's "no", a review's reject where allowed,
        # else the question (and the run) cancelled.
        return dict(kinds.CANCELLED_RESUME)

    def summary(self, answer: Any) -> str:
        from hitl.cards import decision_summary  # cards import models: not at import time

        return clip(decision_summary(self.name, self.request, answer), 200)

    def policy(self) -> dict[str, Any]:
        policy = self.request.get("policy")
        return policy if isinstance(policy, dict) else {}

    def expires_at(self) -> str | None:
        value = self.request.get("expiresAt")
        return str(value) if value else None

    def card_context(self, answer: Any | None, posted: dict[str, Any] | None) -> dict[str, Any]:
        return {"request": self.request, "answer": answer, "posted": posted or {}}

    def answer_from_post(self, data: Any) -> Any:
        from hitl.cards import answer_from_post

        return answer_from_post(self.request, data)[1]


class Input(OurKind):
    name, label, template = "input", "Question", "hitl/cards/input.html"


class Select(OurKind):
    name, label, template = "select", "Choice", "hitl/cards/select.html"


class MultiSelect(OurKind):
    name, label, template = "multiSelect", "Choices", "hitl/cards/multiSelect.html"


class Modal(OurKind):
    name, label, template = "modal", "Notice", "hitl/cards/modal.html"


class Unlock(OurKind):
    name, label, template = "unlock", "Unlock", "hitl/cards/unlock.html"


class Approval(OurKind):
    name, label, template = "approval", "Approval", "hitl/cards/approval.html"
    bulk_approve: ClassVar[bool] = True
    quorum: ClassVar[bool] = True

    def reason(self) -> str:
        return str(self.request.get("reason") or "confirmation")

    def approve_answer(self, because: str = "") -> Any:
        return {"approved": True, **({"reason": because} if because else {})}

    def reject_answer(self, reason: str = "") -> Any:
        return {"approved": False, **({"reason": reason} if reason else {})}

    def vote(self, answer: Any) -> Vote | None:
        if isinstance(answer, dict) and isinstance(answer.get("approved"), bool):
            return Vote(answer["approved"], str(answer.get("reason") or ""))
        return None

    def quorum_answer(self, approved: bool, votes: list[dict[str, Any]]) -> Any:
        return {"approved": approved, "votes": votes}

    def subjects(self) -> list[Subject]:
        return [Subject("approval", None, self.request.get("details"))]


class Review(OurKind):
    name, label, template = "review", "Review", "hitl/cards/review.html"
    bulk_approve: ClassVar[bool] = True  # where "approve" is allowed: approve_answer()
    quorum: ClassVar[bool] = True

    def allowed(self) -> list[str]:
        return list(self.request.get("allowed") or ["approve", "edit", "reject", "respond"])

    def reason(self) -> str:
        return str(self.request.get("reason") or "confirmation")

    def approve_answer(self, because: str = "") -> Any | None:
        return {"decision": "approve"} if "approve" in self.allowed() else None

    def reject_answer(self, reason: str = "") -> Any | None:
        if "reject" not in self.allowed():
            return None
        return {"decision": "reject", **({"reason": reason} if reason else {})}

    def vote(self, answer: Any) -> Vote | None:
        decision = answer.get("decision") if isinstance(answer, dict) else None
        if decision not in ("approve", "reject"):
            return None
        return Vote(decision == "approve", str(answer.get("reason") or ""))

    def quorum_answer(self, approved: bool, votes: list[dict[str, Any]]) -> Any:
        return {"approved": approved, "votes": votes,
                "decision": "approve" if approved else "reject"}

    def subjects(self) -> list[Subject]:
        if "approve" not in self.allowed():
            return []
        if self.request.get("reason") == "tool_approval":
            return [Subject("tool", str(self.request.get("tool") or ""),
                            self.request.get("proposal"))]
        return [Subject("review", None, self.request.get("proposal"))]


OURS: list[type[OurKind]] = [Input, Select, MultiSelect, Modal, Approval, Unlock, Review]

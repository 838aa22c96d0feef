"""Our seven interaction kinds (``hitl.ask``'s helpers): the request / response models
of ``hitl.kinds`` behind the format interface. ``OURS`` is the kinds' one registry."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any, ClassVar

from pydantic import ValidationError

from hitl import kinds, schema_form
from hitl.card_parts import posted_text, readable
from hitl.formats.base import (
    MESSAGE_MAX,
    CardFormError,
    Edit,
    InterruptFormat,
    Subject,
    Vote,
    clip,
    short_json,
)


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

    @cached_property
    def parsed(self) -> kinds.Request | None:
        """The request parsed once (None: not a valid one of our kinds)."""
        try:
            return kinds.parse_request(self.request)
        except ValidationError:
            return None

    def response_schema(self) -> dict[str, Any]:
        parsed = self.parsed
        return parsed.response_schema() if parsed else {"type": "object"}

    def validate(self, answer: Any) -> Any:
        if self.parsed is None:
            return kinds.validate_response(self.request, answer)  # says what is wrong
        return self.parsed.validate_answer(answer)

    def cancelled_value(self) -> Any:
        # ``hitl.ask`` reads it: an approval's "no", a review's reject where allowed,
        # else the question (and the run) cancelled.
        return dict(kinds.CANCELLED_RESUME)

    def summary(self, answer: Any) -> str:
        return clip(self.summary_text(answer if isinstance(answer, dict) else {}), 200)

    def summary_text(self, answer: dict[str, Any]) -> str:
        return short_json(answer)

    def policy(self) -> dict[str, Any]:
        policy = self.request.get("policy")
        return policy if isinstance(policy, dict) else {}

    def expires_at(self) -> str | None:
        value = self.request.get("expiresAt")
        return str(value) if value else None

    # --- the card (templates/hitl/cards/<kind>.html; form names in hitl.cards) ---
    # Form names the kind's own template shows errors beside (the rest go to the card's
    # top), in the order the focus goes to the first in error after a refused answer.
    inline_errors: ClassVar[tuple[str, ...]] = ()

    def card_context(self, answer: Any | None, posted: dict[str, Any] | None) -> dict[str, Any]:
        return {"request": self.request, "answer": answer, "posted": posted or {},
                "inline_errors": list(self.inline_errors), **self.card_parts(posted or {})}

    def card_parts(self, posted: dict[str, Any]) -> dict[str, Any]:
        return {}

    def answer_from_post(self, data: Any) -> Any:
        return {}

    def options(self, key: str = "options") -> list[dict[str, str]]:
        return [{"label": str(o.get("label", o.get("value"))), "value": str(o.get("value"))}
                for o in self.request.get(key) or [] if isinstance(o, dict)]

    def label_of(self, value: Any, key: str = "options") -> str:
        return next((o["label"] for o in self.options(key) if o["value"] == value), str(value))


class Input(OurKind):
    name, label, template = "input", "Question", "hitl/cards/input.html"
    inline_errors = ("value",)

    def card_parts(self, posted: dict[str, Any]) -> dict[str, Any]:
        return {"placeholder": self.request.get("placeholder") or "",
                "value": posted_text(posted, "value") or ""}

    def answer_from_post(self, data: Any) -> Any:
        return {"value": data.get("value", "")}

    def summary_text(self, answer: dict[str, Any]) -> str:
        return str(answer.get("value", ""))


class Select(OurKind):
    name, label, template = "select", "Choice", "hitl/cards/select.html"
    inline_errors = ("value",)

    def card_parts(self, posted: dict[str, Any]) -> dict[str, Any]:
        chosen = posted.get("value") or []
        chosen = chosen if isinstance(chosen, list) else [chosen]
        return {"options": [{**o, "checked": o["value"] in chosen} for o in self.options()]}

    def answer_from_post(self, data: Any) -> Any:
        if not data.get("value"):
            raise CardFormError({"value": ["choose one of the options"]})
        return {"value": data.get("value")}

    def summary_text(self, answer: dict[str, Any]) -> str:
        return self.label_of(answer.get("value"))


class MultiSelect(OurKind):
    name, label, template = "multiSelect", "Choices", "hitl/cards/multiSelect.html"
    inline_errors = ("values",)

    def card_parts(self, posted: dict[str, Any]) -> dict[str, Any]:
        chosen = posted.get("values") or []
        chosen = chosen if isinstance(chosen, list) else [chosen]
        return {"options": [{**o, "checked": o["value"] in chosen} for o in self.options()],
                "min": self.request.get("min"), "max": self.request.get("max")}

    def answer_from_post(self, data: Any) -> Any:
        return {"values": list(data.getlist("values"))}

    def summary_text(self, answer: dict[str, Any]) -> str:
        return ", ".join(self.label_of(v) for v in answer.get("values", [])) or "none"


class Modal(OurKind):
    name, label, template = "modal", "Notice", "hitl/cards/modal.html"
    inline_errors = ("action",)

    def card_parts(self, posted: dict[str, Any]) -> dict[str, Any]:
        return {"title": self.request.get("title") or "", "body": self.request.get("body") or "",
                "actions": self.options("actions")}

    def answer_from_post(self, data: Any) -> Any:
        if not data.get("action"):
            raise CardFormError({"action": ["choose one of the actions"]})
        return {"action": data.get("action")}

    def summary_text(self, answer: dict[str, Any]) -> str:
        return self.label_of(answer.get("action"), "actions")


class Unlock(OurKind):
    name, label, template = "unlock", "Unlock", "hitl/cards/unlock.html"

    def card_parts(self, posted: dict[str, Any]) -> dict[str, Any]:
        return {"key": self.request.get("key") or ""}

    def summary_text(self, answer: dict[str, Any]) -> str:
        return "Unlocked"


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

    inline_errors = ("reason", "decision", "approved")

    def card_parts(self, posted: dict[str, Any]) -> dict[str, Any]:
        details = self.request.get("details")
        return {"details": readable(details) if details not in (None, "", {}, []) else None}

    def answer_from_post(self, data: Any) -> Any:
        decision = data.get("decision")
        if decision not in ("approve", "reject"):
            raise CardFormError({"decision": ["approve or reject"]})
        if decision == "approve":
            return {"approved": True}
        reason = (data.get("reason") or "").strip()
        return {"approved": False, **({"reason": reason} if reason else {})}

    def summary_text(self, answer: dict[str, Any]) -> str:
        if answer.get("approved"):
            return "Approved"
        return "Rejected" + (f": {answer['reason']}" if answer.get("reason") else "")


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

    inline_errors = ("edited", "edited_json", "reason", "feedback", "decision")
    BUTTONS: ClassVar[dict[str, str]] = {"approve": "Approve", "edit": "Save edits",
                                         "reject": "Reject", "respond": "Send feedback"}

    def card_parts(self, posted: dict[str, Any]) -> dict[str, Any]:
        proposal = self.request.get("proposal") or {}
        allowed = self.allowed()
        schema = self.request.get("editSchema")
        fields = schema_form.fields(schema, name="edited", dom_id="", initial=proposal,
                                    posted=posted) if "edit" in allowed else None
        posted_json = posted_text(posted, "edited_json")
        return {
            "proposal": readable(schema_form.ordered(schema, proposal)),
            "allowed": [{"value": a, "label": self.BUTTONS.get(a, a)} for a in allowed],
            "can_edit": "edit" in allowed, "can_reject": "reject" in allowed,
            "can_respond": "respond" in allowed, "can_approve": "approve" in allowed,
            "edit_fields": fields,
            "edit_json": posted_json if posted_json is not None else json.dumps(
                proposal, indent=2, ensure_ascii=False),
            "reason_value": posted_text(posted, "reason") or "",
            "feedback_value": posted_text(posted, "feedback") or "",
        }

    def answer_from_post(self, data: Any) -> Any:
        decision = data.get("decision")
        if decision == "approve":
            return {"decision": "approve"}
        if decision == "reject":
            reason = (data.get("reason") or "").strip()
            return {"decision": "reject", **({"reason": reason} if reason else {})}
        if decision == "respond":
            feedback = (data.get("feedback") or "").strip()
            if not feedback:
                raise CardFormError({"feedback": ["write your feedback first"]})
            return {"decision": "respond", "feedback": feedback}
        if decision == "edit":
            return {"decision": "edit", "edited": self._edited(data)}
        raise CardFormError({"decision": ["choose an action"]})

    def _edited(self, data: Any) -> dict[str, Any]:
        schema = self.request.get("editSchema")
        try:
            if not schema_form.is_form(schema):
                edited = schema_form.json_from_post(data, "edited_json")
                if not isinstance(edited, dict):
                    raise CardFormError({"edited_json": ["The proposal must be a JSON object"]})
                return edited
            edited = schema_form.value_from_post(schema, data, name="edited")
        except schema_form.FormProblems as err:
            raise CardFormError(err.fields) from None
        # Checked here too (validate checks again) for errors in plain words per field.
        problems = schema_form.plain_errors(schema, edited, name="edited")
        if problems:
            raise CardFormError(problems)
        return edited

    def edits(self, answer: Any) -> list[Edit]:
        if not (isinstance(answer, dict) and answer.get("decision") == "edit"
                and "proposal" in self.request):
            return []
        return [Edit("Original proposal", "Edited version", self.request.get("proposal"),
                     answer.get("edited"))]

    def summary_text(self, answer: dict[str, Any]) -> str:
        choice = answer.get("decision")
        if choice == "approve":
            return "Approved"
        if choice == "edit":
            return "Approved with edits"
        if choice == "reject":
            return "Rejected" + (f": {answer['reason']}" if answer.get("reason") else "")
        if choice == "respond":
            return f"Feedback: {answer.get('feedback', '')}"
        return short_json(answer)


OURS: list[type[OurKind]] = [Input, Select, MultiSelect, Modal, Approval, Unlock, Review]
KINDS: tuple[str, ...] = tuple(f.name for f in OURS)

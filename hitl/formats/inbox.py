"""LangGraph Agent Inbox: ``interrupt([HumanInterrupt])`` (a list of one), resumed with
``[HumanResponse]``. The types were ``langgraph.prebuilt.interrupt``'s (deprecated there,
their announced new home ``langchain.agents.interrupt`` is not in langchain 1.5), so
their field names are restated here from that module."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypedDict

from hitl import card_parts, schema_form
from hitl.formats.base import (
    MESSAGE_MAX,
    CardFormError,
    InterruptFormat,
    Subject,
    Vote,
    clip,
    short_json,
)
from hitl.kinds import refuse


class ActionRequest(TypedDict):
    action: str
    args: dict[str, Any]


class HumanInterruptConfig(TypedDict):
    allow_ignore: bool
    allow_respond: bool
    allow_edit: bool
    allow_accept: bool


class HumanInterrupt(TypedDict):
    action_request: ActionRequest
    config: HumanInterruptConfig
    description: str | None


class HumanResponse(TypedDict):
    type: Literal["accept", "ignore", "response", "edit"]
    args: None | str | ActionRequest


# response type → the config flag that allows it
ALLOW = {"accept": "allow_accept", "edit": "allow_edit", "response": "allow_respond",
         "ignore": "allow_ignore"}


class AgentInbox(InterruptFormat):
    name, label, template = "agent_inbox", "Inbox action", "hitl/cards/agent_inbox.html"
    bulk_approve: ClassVar[bool] = True
    quorum: ClassVar[bool] = True

    @classmethod
    def recognise(cls, value: Any, response_schema: dict[str, Any] | None) -> bool:
        if not (isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict)):
            return False
        item = value[0]
        action = item.get("action_request")
        return (isinstance(action, dict) and isinstance(action.get("action"), str)
                and isinstance(action.get("args"), dict) and isinstance(item.get("config"), dict))

    @property
    def item(self) -> dict[str, Any]:
        return self.value[0]

    def allowed(self) -> list[str]:
        config = self.item["config"]
        return [t for t, flag in ALLOW.items() if config.get(flag)]

    def message(self) -> str:
        text = self.item.get("description")
        if isinstance(text, str) and text.strip():
            return clip(text.strip().splitlines()[0], MESSAGE_MAX)
        return clip(f"Review: {self.item['action_request']['action']}", MESSAGE_MAX)

    def reason(self) -> str:
        return "confirmation"

    def response_schema(self) -> dict[str, Any]:
        action = self.item["action_request"]
        branches = {
            "accept": {"type": "object", "properties": {"type": {"const": "accept"},
                                                        "args": {"type": "null"}},
                       "required": ["type"], "additionalProperties": False},
            "ignore": {"type": "object", "properties": {"type": {"const": "ignore"},
                                                        "args": {"type": "null"}},
                       "required": ["type"], "additionalProperties": False},
            "response": {"type": "object", "properties": {
                "type": {"const": "response"}, "args": {"type": "string", "minLength": 1}},
                "required": ["type", "args"], "additionalProperties": False},
            "edit": {"type": "object", "properties": {"type": {"const": "edit"}, "args": {
                "type": "object", "properties": {"action": {"const": action["action"]},
                                                 "args": {"type": "object"}},
                "required": ["action", "args"], "additionalProperties": False}},
                "required": ["type", "args"], "additionalProperties": False},
        }
        return {"type": "array", "title": "HumanResponse list",
                "prefixItems": [{"oneOf": [branches[t] for t in self.allowed()]}],
                "items": False, "minItems": 1, "maxItems": 1}

    def validate(self, answer: Any) -> Any:
        # The answer is the resume value: a list of one HumanResponse.
        if not (isinstance(answer, list) and len(answer) == 1 and isinstance(answer[0], dict)):
            raise refuse("inbox", {"payload": [
                'expected a list of one response: [{"type": ..., "args": ...}]']})
        response, allowed = answer[0], self.allowed()
        kind, args = response.get("type"), response.get("args")
        if set(response) - {"type", "args"}:
            return self._bad("0", f"unknown keys {sorted(set(response) - {'type', 'args'})}")
        if kind not in allowed:
            raise refuse("inbox", {"0.type": [
                f"{kind!r} is not allowed here (allowed: {', '.join(allowed) or 'none'})"]})
        if kind in ("accept", "ignore") and args is not None:
            raise refuse("inbox", {"0.args": [f"must be null for {kind}"]})
        if kind == "response" and not (isinstance(args, str) and args.strip()):
            raise refuse("inbox", {"0.args": ["write your response"]})
        if kind == "edit":
            name = self.item["action_request"]["action"]
            if not (isinstance(args, dict) and set(args) == {"action", "args"}
                    and isinstance(args["args"], dict)):
                raise refuse("inbox", {"0.args": [
                    'expected {"action": <action>, "args": {...}}']})
            if args["action"] != name:
                raise refuse("inbox", {"0.args.action": [f"must stay {name!r}"]})
        return [{"type": kind, "args": args}]

    def _bad(self, field: str, message: str) -> Any:
        raise refuse("inbox", {field: [message]})

    def cancelled_value(self) -> Any:
        return [{"type": "ignore", "args": None}]

    def approve_answer(self, because: str = "") -> Any | None:
        return [{"type": "accept", "args": None}] if "accept" in self.allowed() else None

    def reject_answer(self, reason: str = "") -> Any | None:
        return [{"type": "ignore", "args": None}] if "ignore" in self.allowed() else None

    def vote(self, answer: Any) -> Vote | None:
        kind = answer[0].get("type") if isinstance(answer, list) and answer else None
        if kind == "accept":
            return Vote(True)
        if kind == "ignore":
            return Vote(False)
        return None

    def subjects(self) -> list[Subject]:
        if "accept" not in self.allowed():
            return []
        action = self.item["action_request"]
        return [Subject("tool", action["action"], action["args"])]

    def summary(self, answer: Any) -> str:
        if not (isinstance(answer, list) and answer and isinstance(answer[0], dict)):
            return short_json(answer)
        kind, args = answer[0].get("type"), answer[0].get("args")
        return clip({"accept": "Accepted", "ignore": "Ignored", "edit": "Accepted with edits",
                     "response": f"Responded: {args}"}.get(kind, short_json(answer)), 200)

    def card_context(self, answer: Any | None, posted: dict[str, Any] | None) -> dict[str, Any]:
        action = self.item["action_request"]
        row = card_parts.tool_row(name=action["action"], args=action["args"],
                                  description=self.item.get("description") or "",
                                  allowed=self.allowed(), args_schema=None, posted=posted,
                                  inbox=True)
        return {"action": action["action"], "args": action["args"],
                "description": self.item.get("description") or "",
                "allowed": self.allowed(), "answer": answer, "posted": posted or {},
                "row": row, "inline_errors": ["decision"],
                "error_aliases": {"0.type": "decision", "0.args": "decision", "0": "decision"}}

    def answer_from_post(self, data: Any) -> Any:
        try:
            return card_parts.inbox_from_post(
                data, action=self.item["action_request"]["action"], allowed=self.allowed())
        except schema_form.FormProblems as err:
            raise CardFormError(err.fields) from None

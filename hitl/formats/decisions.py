"""One tool call's ``Decision`` as LangChain's ``HumanInTheLoopMiddleware`` reads it
(approve, edit, reject, respond): its JSON Schema, the server's check of it, the decline
a cancel gives, what it did to the call and its summary; and a call's question line.
Shared by both middleware formats (``hitl.formats.middleware``)."""

from __future__ import annotations

from typing import Any, Literal

from hitl import card_parts
from hitl.formats.base import CANCELS_RUN, MESSAGE_MAX, CallDecision, clip, short_json
from hitl.schema_errors import by_field

DecisionType = Literal["approve", "edit", "reject", "respond"]
DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject", "respond")
CANCELLED_MESSAGE = "cancelled by user"


def is_action(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("name"), str)
            and isinstance(value.get("args"), dict))


def decision_schema(name: str, allowed: list[str],
                    args_schema: dict[str, Any] | None) -> dict[str, Any]:
    """JSON Schema of one ``Decision`` for the tool ``name``."""
    branches = {
        "approve": {"type": "object", "properties": {"type": {"const": "approve"}},
                    "required": ["type"], "additionalProperties": False},
        "edit": {"type": "object", "properties": {
            "type": {"const": "edit"},
            "edited_action": {"type": "object", "properties": {
                "name": {"const": name}, "args": args_schema or {"type": "object"}},
                "required": ["name", "args"], "additionalProperties": False}},
            "required": ["type", "edited_action"], "additionalProperties": False},
        "reject": {"type": "object", "properties": {"type": {"const": "reject"},
                                                    "message": {"type": "string"}},
                   "required": ["type"], "additionalProperties": False},
        "respond": {"type": "object", "properties": {"type": {"const": "respond"},
                                                     "message": {"type": "string",
                                                                 "minLength": 1}},
                    "required": ["type", "message"], "additionalProperties": False},
    }
    members = [branches[d] for d in dict.fromkeys(allowed) if d in branches]
    return members[0] if len(members) == 1 else {"oneOf": members}


def check_decision(decision: Any, *, name: str, allowed: list[str],
                   args_schema: dict[str, Any] | None, at: str) -> tuple[Any, dict]:
    """One decision checked as the middleware reads it: (clean decision, field errors)."""
    prefix = f"{at}." if at else ""
    if not isinstance(decision, dict):
        return None, {at or "payload": ["expected an object with a 'type'"]}
    kind = decision.get("type")
    if kind not in DECISIONS:
        return None, {f"{prefix}type": [f"must be one of {', '.join(allowed)}"]}
    if kind not in allowed:
        return None, {f"{prefix}type": [
            f"{kind!r} is not allowed for {name} (allowed: {', '.join(allowed)})"]}
    extra = set(decision) - {"type", {"edit": "edited_action"}.get(kind, "message")}
    if extra or (kind == "approve" and "message" in decision):
        return None, {f"{prefix}{sorted(extra or {'message'})[0]}": [
            f"not part of a {kind} decision"]}
    if kind in ("reject", "respond"):
        message = decision.get("message")
        if message is not None and not isinstance(message, str):
            return None, {f"{prefix}message": ["must be text"]}
        if kind == "respond" and not (message or "").strip():
            return None, {f"{prefix}message": ["write the response the tool returns"]}
        return decision, {}
    if kind == "edit":
        action = decision.get("edited_action")
        if not is_action(action) or set(action) - {"name", "args"}:
            return None, {f"{prefix}edited_action": [
                "expected {\"name\": <tool>, \"args\": {...}}"]}
        if action["name"] != name:
            return None, {f"{prefix}edited_action.name": [
                f"must stay {name!r} (an edit cannot switch tools)"]}
        if args_schema:
            fields = by_field(args_schema, action["args"], root="args")
            if fields:
                return None, {f"{prefix}edited_action.args"
                              + ("" if k == "args" else f".{k}"): v for k, v in fields.items()}
    return decision, {}


CALL_MAX = 120  # characters of one call in a question line ("send_email(to=…, body=…)")
ARG_MAX = 40  # characters of one argument's value in it


def call_text(name: str, args: Any, limit: int = CALL_MAX) -> str:
    """A tool call in short: ``send_email(to=x@example.com, subject=Hi…)``, bounded."""
    if isinstance(args, dict):
        shown = ", ".join(f"{k}={clip(v if isinstance(v, str) else short_json(v), ARG_MAX)}"
                          for k, v in args.items())
    else:
        shown = short_json(args, ARG_MAX)
    name = clip(name, 60)
    return f"{name}({clip(shown, max(limit - len(name) - 2, 8))})"


def own_words(description: Any, name: str) -> str:
    """The first line of what the agent says about a call (not the middleware's default)."""
    if not isinstance(description, str):
        return ""
    text = card_parts.own_description(description, name)
    return text.splitlines()[0].strip() if text else ""


def call_question(name: str, args: Any, description: Any) -> str:
    """The question line of one call: "Approve send_email(to=…): <its description>"."""
    words = own_words(description, name)
    return clip(f"Approve {call_text(name, args)}" + (f": {words}" if words else ""),
                MESSAGE_MAX)


def declined(allowed: list[str]) -> Any:
    """A declined call: rejected, or answered "cancelled" where only respond is allowed;
    never approved: a call that allows neither cancels the run (``CANCELS_RUN``) rather
    than run a tool nobody approved or send a reject the middleware refuses."""
    if "reject" in allowed:
        return {"type": "reject", "message": CANCELLED_MESSAGE}
    if "respond" in allowed:
        return {"type": "respond", "message": CANCELLED_MESSAGE}
    return CANCELS_RUN


def call_decision(action: dict[str, Any], decision: Any,
                  tool_call_id: str | None = None) -> CallDecision:
    decision = decision if isinstance(decision, dict) else {}
    edited = decision.get("edited_action")
    return CallDecision(name=action["name"], args=action["args"],
                        decision=str(decision.get("type") or ""), tool_call_id=tool_call_id,
                        ran_args=edited.get("args") if isinstance(edited, dict) else None)


def decision_summary(decision: Any) -> str:
    if not isinstance(decision, dict):
        return short_json(decision)
    kind = decision.get("type")
    if kind == "approve":
        return "Approved"
    if kind == "edit":
        return "Approved with edits"
    if kind == "reject":
        return "Rejected" + (f": {decision['message']}" if decision.get("message") else "")
    if kind == "respond":
        return f"Responded: {decision.get('message', '')}"
    return short_json(decision)

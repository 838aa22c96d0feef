"""Card pieces the interrupt formats share (pure: no queries, no writes).

A tool call under review (LangChain's ``HumanInTheLoopMiddleware``, batched or per call,
and Agent Inbox): what the card shows of it, and its form post read back as the decision
the graph expects. Inputs are field dicts (``input_name``, ``kind``, ``label``, ``value``):
``hitl.cards`` gives each its id, its errors and the focus; ``_fields.html`` renders them.

Form names per tool call (``suffix`` is "" for a card of one call, ``.<i>`` for row i):
``decision<suffix>`` (the choice), ``message<suffix>`` (a reject reason or a response),
``edited<suffix>.<arg>`` (fields from the tool's argument schema) or
``edited_json<suffix>`` (a JSON editor). ``all=approve`` approves every row at once.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hitl import schema_form
from hitl.schema_form import FormProblems


def readable(value: Any, depth: int = 0) -> dict[str, Any]:
    """A tree ``hitl/cards/_value.html`` renders (no raw JSON for people)."""
    # "kind" names the shape (a key like "items" would clash with dict.items in templates).
    if depth > 6:
        return {"kind": "scalar", "text": json.dumps(value, default=str)}
    if isinstance(value, dict):
        return {"kind": "pairs", "pairs": [
            {"label": schema_form.humanize(k), "value": readable(v, depth + 1)}
            for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {"kind": "list", "entries": [readable(v, depth + 1) for v in value]}
    if isinstance(value, bool):
        return {"kind": "scalar", "text": "yes" if value else "no"}
    if value is None:
        return {"kind": "scalar", "text": "—"}
    return {"kind": "scalar", "text": str(value)}


def posted_text(posted: Any, name: str) -> str | None:
    if not posted or name not in posted:
        return None
    value = posted[name]
    if isinstance(value, list):
        return value[-1] if value else ""
    return value


# Words on the card for each decision a tool call may get (middleware, then Agent Inbox).
CHOICE_LABELS = {"approve": "Approve", "edit": "Edit the arguments", "reject": "Reject",
                 "respond": "Respond instead of running it", "accept": "Accept",
                 "response": "Respond", "ignore": "Ignore"}


# The middleware's default description: this prefix, then the call again ("\n\nTool:
# <name>\nArgs: {python repr}"). Cards and question lines show the call itself, readably.
DEFAULT_PREFIX = "Tool execution requires approval"


def own_description(description: str | None, name: str) -> str:
    """What the agent says about a tool call, without the middleware's default text
    (which says nothing the call does not)."""
    text = re.sub(rf"\s*Tool: {re.escape(name)}\nArgs: .*\Z", "", description or "",
                  flags=re.S).strip()
    return "" if text == DEFAULT_PREFIX else text


# Under the JSON editor of a tool whose argument schema nobody gave us (no form to build).
NO_SCHEMA_HELP = ("This tool's argument schema is not known here, so the arguments are not "
                  "checked before they are sent: the tool checks them when it runs.")


def tool_row(*, name: str, args: Any, description: str, allowed: list[str],
             args_schema: dict[str, Any] | None, posted: Any, suffix: str = "",
             buttons: bool = True, inbox: bool = False) -> dict[str, Any]:
    """What a card shows of one tool call and the inputs of its decision.

    ``buttons``: one call per card, each decision its own submit button; else (a row of
    a batch) the decision is a radio group and the card has one submit.
    """
    approve = "accept" if inbox else "approve"
    description = own_description(description, name)
    decision_name = f"decision{suffix}"
    chosen = posted_text(posted, decision_name) or ""
    row: dict[str, Any] = {
        "name": name, "args": args, "args_readable": readable(args),
        "description": description, "allowed": allowed, "buttons": buttons,
        "multi": bool(suffix), "decision_name": decision_name,
        "can_approve": approve in allowed, "can_ignore": inbox and "ignore" in allowed,
        "choice_fields": [] if buttons else [{
            "input_name": decision_name, "kind": "radio", "label": f"Decision on {name}",
            "options": [{"value": d, "label": CHOICE_LABELS.get(d, d)} for d in allowed],
            "value": chosen, "required": True}],
        "edit_fields": None, "edit_open": chosen == "edit",
    }
    if "edit" in allowed:
        row["edit_fields"] = edit_fields(args, args_schema, posted, suffix)
    messages = [d for d in (("reject", "respond") if not inbox else ("response",))
                if d in allowed]
    row["message_field"] = bool(messages)
    row["message_open"] = chosen in messages
    if messages:
        only_reject = messages == ["reject"]
        row["message_summary"] = {("reject",): "Reject", ("respond",): "Respond instead",
                                  ("reject", "respond"): "Reject or respond",
                                  ("response",): "Respond"}[tuple(messages)]
        row["message_buttons"] = [{"value": d, "label": {"reject": "Reject",
                                                          "respond": "Send response",
                                                          "response": "Send response"}[d]}
                                  for d in messages]
        row["message_fields"] = [{
            "input_name": f"message{suffix}", "kind": "textarea", "rows": 2,
            "label": "Reason (optional)" if only_reject else (
                "Message (a reason for a rejection; what the tool returns for a response)"
                if len(messages) > 1 else "Your response"),
            "value": posted_text(posted, f"message{suffix}") or "", "required": False,
            "no_optional": True}]
    return row


def edit_fields(args: Any, args_schema: dict[str, Any] | None, posted: Any,
                suffix: str) -> list[dict[str, Any]]:
    """The edit's inputs: fields from the argument schema, else one JSON editor."""
    if args_schema and schema_form.is_form(args_schema):
        return schema_form.fields(args_schema, name=f"edited{suffix}", dom_id="",
                                  initial=args, posted=posted) or []
    text = posted_text(posted, f"edited_json{suffix}")
    return [{"input_name": f"edited_json{suffix}", "kind": "json",
             "label": "Arguments", "required": True, "no_optional": True,
             "help": NO_SCHEMA_HELP,
             "value": text if text is not None else json.dumps(args, indent=2,
                                                               ensure_ascii=False)}]


def edited_args(data: Any, args_schema: dict[str, Any] | None, suffix: str,
                label: str) -> dict[str, Any]:
    """The edited arguments of a form post; FormProblems in plain words."""
    if args_schema and schema_form.is_form(args_schema):
        args = schema_form.value_from_post(args_schema, data, name=f"edited{suffix}")
        problems = schema_form.plain_errors(args_schema, args, name=f"edited{suffix}")
    else:
        args = schema_form.json_from_post(data, f"edited_json{suffix}")
        if not isinstance(args, dict):
            raise FormProblems({f"edited_json{suffix}": [
                f"{label}: the arguments must be a JSON object ({{...}})"]})
        problems = schema_form.plain_errors(args_schema, args, name=f"edited_json{suffix}") \
            if args_schema else {}
    if problems:
        raise FormProblems(problems)
    return args


def decision_from_post(data: Any, *, name: str, allowed: list[str],
                       args_schema: dict[str, Any] | None, suffix: str = "") -> dict[str, Any]:
    """One middleware ``Decision`` from a form post; FormProblems naming the inputs."""
    choice = data.get(f"decision{suffix}") or ""
    if data.get("all") == "approve":  # "Approve all": whatever a row had chosen
        choice = "approve"
    if not choice:
        raise FormProblems({f"decision{suffix}": [f"{name}: choose what to do"]})
    if choice not in allowed:
        raise FormProblems({f"decision{suffix}": [f"{name}: “{choice}” is not offered here"]})
    message = (data.get(f"message{suffix}") or "").strip()
    if choice == "approve":
        return {"type": "approve"}
    if choice == "reject":
        return {"type": "reject", **({"message": message} if message else {})}
    if choice == "respond":
        if not message:
            raise FormProblems({f"message{suffix}": [
                f"{name}: write the response the tool call gets instead of running"]})
        return {"type": "respond", "message": message}
    return {"type": "edit", "edited_action": {
        "name": name, "args": edited_args(data, args_schema, suffix, name)}}


def inbox_from_post(data: Any, *, action: str, allowed: list[str]) -> list[dict[str, Any]]:
    """Agent Inbox's answer, ``[HumanResponse]``, from a form post."""
    choice = data.get("decision") or ""
    if choice not in allowed:
        raise FormProblems({"decision": ["choose one of: " + ", ".join(
            CHOICE_LABELS.get(a, a) for a in allowed)]})
    if choice == "response":
        text = (data.get("message") or "").strip()
        if not text:
            raise FormProblems({"message": ["Your response: write it first"]})
        return [{"type": "response", "args": text}]
    if choice == "edit":
        return [{"type": "edit", "args": {"action": action,
                                          "args": edited_args(data, None, "", action)}}]
    return [{"type": choice, "args": None}]

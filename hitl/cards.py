"""Review cards: what a card template shows, and how a card's form post becomes an answer.

Shared by every HTML surface (chat pages, admin queue). Pure: no queries beyond the
interrupt's own ``decided_by``, no writes. The answer itself is validated by the decision
service (``hitl.kinds.validate_response``); here we only turn form fields into a payload
and report what a form cannot express (a number that is not a number, JSON that is not JSON).

Form field names, per kind:
  input ``value`` · select ``value`` · multiSelect ``values`` (repeated) · modal ``action``
  approval ``decision`` = approve | reject, ``reason`` · unlock ``decision`` = unlock
  review ``decision`` = approve | edit | reject | respond, ``reason``, ``feedback``,
  ``edited.<field>`` (generated from editSchema) or ``edited_json`` (the JSON editor).
  Any kind: ``_status`` = cancelled declines the question (AG-UI status "cancelled").
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from hitl import policies
from hitl.models import AgentInterrupt

REVIEW_LABELS = {"approve": "Approve", "edit": "Save edits", "reject": "Reject",
                 "respond": "Send feedback"}
KIND_LABELS = {"input": "Question", "select": "Choice", "multiSelect": "Choices",
               "modal": "Notice", "approval": "Approval", "unlock": "Unlock", "review": "Review"}


class CardFormError(Exception):
    """A card form that cannot become a payload; ``fields`` maps field names to messages."""

    def __init__(self, fields: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {', '.join(v)}" for k, v in fields.items()))
        self.fields = fields


# --- showing values ------------------------------------------------------------------------

def humanize(key: str) -> str:
    text = str(key).replace("_", " ").strip()
    # camelCase → words
    out = "".join(" " + c.lower() if c.isupper() and i else c for i, c in enumerate(text))
    return out[:1].upper() + out[1:]


def readable(value: Any, depth: int = 0) -> dict[str, Any]:
    """A tree the template ``hitl/cards/_value.html`` renders (no raw JSON for people)."""
    # "kind" names the shape (a key like "items" would clash with dict.items in templates).
    if depth > 6:
        return {"kind": "scalar", "text": json.dumps(value, default=str)}
    if isinstance(value, dict):
        return {"kind": "pairs", "pairs": [{"label": humanize(k), "value": readable(v, depth + 1)}
                                           for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {"kind": "list", "entries": [readable(v, depth + 1) for v in value]}
    if isinstance(value, bool):
        return {"kind": "scalar", "text": "yes" if value else "no"}
    if value is None:
        return {"kind": "scalar", "text": "—"}
    return {"kind": "scalar", "text": str(value)}


def _options(request: dict[str, Any], key: str = "options") -> list[dict[str, str]]:
    return [{"label": str(o.get("label", o.get("value"))), "value": str(o.get("value"))}
            for o in request.get(key) or [] if isinstance(o, dict)]


def _label_of(options: list[dict[str, str]], value: Any) -> str:
    for option in options:
        if option["value"] == value:
            return option["label"]
    return str(value)


def decision_summary(kind: str, request: dict[str, Any], decision: Any) -> str:
    """One line saying what was answered."""
    d = decision if isinstance(decision, dict) else {}
    if kind == "input":
        return str(d.get("value", ""))
    if kind == "select":
        return _label_of(_options(request), d.get("value"))
    if kind == "multiSelect":
        return ", ".join(_label_of(_options(request), v) for v in d.get("values", [])) or "none"
    if kind == "modal":
        return _label_of(_options(request, "actions"), d.get("action"))
    if kind == "approval":
        if d.get("approved"):
            return "Approved"
        return "Rejected" + (f": {d['reason']}" if d.get("reason") else "")
    if kind == "unlock":
        return "Unlocked"
    if kind == "review":
        choice = d.get("decision")
        if choice == "approve":
            return "Approved"
        if choice == "edit":
            return "Approved with edits"
        if choice == "reject":
            return "Rejected" + (f": {d['reason']}" if d.get("reason") else "")
        if choice == "respond":
            return f"Feedback: {d.get('feedback', '')}"
    return json.dumps(decision, default=str)


# --- the review edit form --------------------------------------------------------------------

def _field_kind(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return "enum"
    if kind in ("string", "number", "integer", "boolean"):
        return kind
    if kind == "array" and (schema.get("items") or {}).get("type") == "string" \
            and "enum" not in (schema.get("items") or {}):
        return "string_list"
    return "json"


def edit_form(schema: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """Fields generated from an object editSchema; None → use the whole-proposal JSON editor."""
    if not schema or schema.get("type") != "object" or not schema.get("properties"):
        return None
    required = set(schema.get("required") or [])
    fields = []
    for name, sub in schema["properties"].items():
        sub = sub if isinstance(sub, dict) else {}
        fields.append({"name": name, "input_name": f"edited.{name}",
                       "label": sub.get("title") or humanize(name),
                       "help": sub.get("description", ""), "kind": _field_kind(sub),
                       "required": name in required, "schema": sub,
                       "choices": [str(v) for v in sub.get("enum", [])]})
    return fields


def _initial_text(kind: str, value: Any) -> str:
    if value is None:
        return ""
    if kind == "string_list":
        return "\n".join(str(v) for v in value) if isinstance(value, list) else str(value)
    if kind == "json":
        return json.dumps(value, indent=2, ensure_ascii=False)
    if kind == "boolean":
        return "on" if value else ""
    return str(value)


def _plain(values: Any) -> dict[str, Any]:
    """A posted form (QueryDict or dict) as a dict: repeated fields as lists."""
    if not values:
        return defaultdict(str)
    if hasattr(values, "lists"):
        return defaultdict(str, {k: v if len(v) > 1 or k == "values" else v[0]
                                 for k, v in values.lists() if k != "csrfmiddlewaretoken"})
    return defaultdict(str, values)


def _posted(values: dict[str, Any], name: str) -> Any:
    value = values[name] if name in values else None
    if isinstance(value, list):
        return value[-1] if value else ""
    return value


# --- card context ----------------------------------------------------------------------------

def card_context(interrupt: AgentInterrupt, *, action_url: str,
                 errors: dict[str, list[str]] | None = None, values: dict | None = None,
                 can_answer: bool = True, htmx: bool = False,
                 viewer: Any = None, preview: bool = False) -> dict[str, Any]:
    """Everything ``hitl/cards/card.html`` needs for one interrupt.

    ``errors``: field name → messages (from CardFormError or the service's InvalidInput);
    names that are not a field of the card show at its top. ``values``: the posted form,
    to keep what the person typed. ``htmx``: add the hx-* attributes (answer in place).
    ``preview``: the interrupt is not stored (nobody assigned, no votes: nothing to read).
    """
    request = interrupt.request if isinstance(interrupt.request, dict) else {}
    kind = interrupt.kind
    values = _plain(values)
    # A defaultdict: a template asking for a field with no errors gets [] (a plain dict
    # would fall back to attributes, and ``errors.values`` is a method).
    errors = defaultdict(list, {k: list(v) if isinstance(v, (list, tuple)) else [str(v)]
                                for k, v in (errors or {}).items()})
    pending = interrupt.status == AgentInterrupt.Status.PENDING
    # Who may decide (hitl.policies): four-eyes keeps the requester's card read-only
    # ("waiting for a reviewer"); with no ``viewer`` the card assumes the requester views it.
    waiting_for_reviewer = pending and not interrupt.requester_may_decide and (
        viewer is None or getattr(viewer, "pk", None) == interrupt.run.owner_id)
    if waiting_for_reviewer or (pending and viewer is not None
                                and not policies.may_decide(viewer, interrupt)):
        can_answer = False
    card: dict[str, Any] = {
        "interrupt_id": interrupt.interrupt_id,
        "run_id": str(interrupt.run_id),
        "dom_id": f"card-{interrupt.interrupt_id}",
        "kind": kind,
        "kind_label": KIND_LABELS.get(kind, kind),
        "message": interrupt.message,
        "reason": request.get("reason") or "",
        "request": request,
        "status": interrupt.status,
        "pending": pending,
        "answerable": pending and can_answer,
        "can_answer": can_answer,
        # Which agent asked (when the caller loaded the run with the interrupt).
        "asked_by": interrupt.run.agent if AgentInterrupt.run.is_cached(interrupt) else "",
        "created_at": interrupt.created_at,
        "expires_at": interrupt.expires_at,
        "action_url": action_url,
        "htmx": htmx,
        "errors": errors,
        "values": values,
        "waiting_for_reviewer": waiting_for_reviewer,
        "assigned_to": _assigned_to(interrupt) if pending and not preview else [],
        "approvals_label": "" if preview else _approvals_label(interrupt),
    }
    known = {"value", "values", "action", "reason", "feedback", "decision", "edited",
             "edited_json"}
    if kind == "input":
        card["placeholder"] = request.get("placeholder") or ""
        card["value"] = _posted(values, "value") or ""
    elif kind in ("select", "multiSelect"):
        chosen = values.get("values" if kind == "multiSelect" else "value") or []
        chosen = chosen if isinstance(chosen, list) else [chosen]
        card["options"] = [{**o, "checked": o["value"] in chosen,
                            "id": f"{card['dom_id']}-opt-{i}"}
                           for i, o in enumerate(_options(request))]
        card["min"] = request.get("min")
        card["max"] = request.get("max")
    elif kind == "modal":
        card["title"] = request.get("title") or ""
        card["body"] = request.get("body") or ""
        card["actions"] = _options(request, "actions")
    elif kind == "approval":
        details = request.get("details")
        card["details"] = readable(details) if details not in (None, "", {}, []) else None
    elif kind == "unlock":
        card["key"] = request.get("key") or ""
    elif kind == "review":
        proposal = request.get("proposal") or {}
        card["proposal"] = readable(proposal)
        card["allowed"] = [{"value": a, "label": REVIEW_LABELS.get(a, a)}
                           for a in request.get("allowed")
                           or ["approve", "edit", "reject", "respond"]]
        allowed = {a["value"] for a in card["allowed"]}
        card["can_edit"] = "edit" in allowed
        card["can_reject"] = "reject" in allowed
        card["can_respond"] = "respond" in allowed
        card["can_approve"] = "approve" in allowed
        fields = edit_form(request.get("editSchema"))
        if fields is not None:
            for field in fields:
                posted = _posted(values, field["input_name"])
                field["id"] = f"{card['dom_id']}-edit-{field['name']}"
                field["value"] = posted if posted is not None else _initial_text(
                    field["kind"], proposal.get(field["name"]))
                # The service reports an edit against the schema as "edited": "<field>: ...".
                moved = [m for m in errors["edited"] if m.split(":", 1)[0].split("/")[0]
                         == field["name"]]
                errors["edited"] = [m for m in errors["edited"] if m not in moved]
                field["errors"] = errors.get(field["input_name"], []) + moved
                known.add(field["input_name"])
        card["edit_fields"] = fields
        posted_json = _posted(values, "edited_json")
        card["edit_json"] = posted_json if posted_json is not None else json.dumps(
            proposal, indent=2, ensure_ascii=False)
        card["reason_value"] = _posted(values, "reason") or ""
        card["feedback_value"] = _posted(values, "feedback") or ""
    card["other_errors"] = [m for k, msgs in errors.items() if k not in known
                            for m in ([f"{k}: {x}" for x in msgs]
                                      if k not in ("payload", "__all__", "detail") else msgs)]
    if not pending:
        decider = interrupt.decided_by
        card["decided_by"] = getattr(decider, "username", "") if decider else ""
        card["decided_at"] = interrupt.decided_at
        if interrupt.status in (AgentInterrupt.Status.DECIDED, AgentInterrupt.Status.APPLIED):
            card["summary"] = decision_summary(kind, request, interrupt.decision)
            card["state_label"] = "Answered"
        elif interrupt.status == AgentInterrupt.Status.CANCELLED:
            card["summary"] = "Cancelled"
            card["state_label"] = "Cancelled"
        else:
            card["summary"] = "Expired before anyone answered"
            card["state_label"] = "Expired"
    else:
        card["state_label"] = ("Waiting for a reviewer" if waiting_for_reviewer
                               else "Waiting for an answer" if can_answer
                               else "Waiting (read-only)")
    return card


def _assigned_to(interrupt: AgentInterrupt) -> list[str]:
    users, groups = policies.assigned_names(interrupt)
    return users + [f"group {g}" for g in groups]


def _approvals_label(interrupt: AgentInterrupt) -> str:
    """ "2 of 3 approvals" for a quorum question, else ""."""
    if interrupt.required_approvals <= 1:
        return ""
    return policies.tally(interrupt.required_approvals,
                          sum(1 for v in interrupt.votes.all() if v.approved))


# --- form post → answer ---------------------------------------------------------------------

def _number(kind: str, text: str) -> int | float:
    if kind == "integer":
        return int(text)
    number = float(text)
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() \
        else number


def _edited(request: dict[str, Any], data: Any) -> dict[str, Any]:
    fields = edit_form(request.get("editSchema"))
    problems: dict[str, list[str]] = {}
    if fields is None:
        text = data.get("edited_json", "")
        try:
            edited = json.loads(text)
        except ValueError as err:
            raise CardFormError({"edited_json": [f"not valid JSON: {err}"]}) from None
        if not isinstance(edited, dict):
            raise CardFormError({"edited_json": ["must be a JSON object"]})
        return edited
    edited: dict[str, Any] = {}
    for field in fields:
        name, kind, key = field["name"], field["kind"], field["input_name"]
        if kind == "boolean":
            edited[name] = data.get(key) in ("on", "true", "1")
            continue
        text = (data.get(key) or "").strip() if kind != "string" else (data.get(key) or "")
        if text == "" and not field["required"] and kind != "string":
            continue
        try:
            if kind in ("number", "integer"):
                edited[name] = _number(kind, text)
            elif kind == "string_list":
                edited[name] = [line.strip() for line in text.splitlines() if line.strip()]
            elif kind == "json":
                edited[name] = json.loads(text)
            else:
                edited[name] = text
        except ValueError:
            problems[key] = [{"integer": "enter a whole number", "number": "enter a number",
                              "json": "not valid JSON"}.get(kind, "invalid value")]
    if problems:
        raise CardFormError(problems)
    return edited


def answer_from_post(request: dict[str, Any], data: Any) -> tuple[str, Any]:
    """(status, payload) from a card's form fields; raises CardFormError for form problems.

    ``data`` is a QueryDict (or any mapping with ``get`` and, for multiSelect, ``getlist``).
    """
    if data.get("_status") == "cancelled":
        return "cancelled", None
    kind = request.get("type")
    if kind == "input":
        return "resolved", {"value": data.get("value", "")}
    if kind == "select":
        if not data.get("value"):
            raise CardFormError({"value": ["choose one of the options"]})
        return "resolved", {"value": data.get("value")}
    if kind == "multiSelect":
        return "resolved", {"values": list(data.getlist("values"))}
    if kind == "modal":
        if not data.get("action"):
            raise CardFormError({"action": ["choose one of the actions"]})
        return "resolved", {"action": data.get("action")}
    if kind == "approval":
        decision = data.get("decision")
        if decision not in ("approve", "reject"):
            raise CardFormError({"decision": ["approve or reject"]})
        if decision == "approve":
            return "resolved", {"approved": True}
        reason = (data.get("reason") or "").strip()
        return "resolved", {"approved": False, **({"reason": reason} if reason else {})}
    if kind == "unlock":
        return "resolved", {}
    if kind == "review":
        decision = data.get("decision")
        if decision == "approve":
            return "resolved", {"decision": "approve"}
        if decision == "reject":
            reason = (data.get("reason") or "").strip()
            return "resolved", {"decision": "reject", **({"reason": reason} if reason else {})}
        if decision == "respond":
            feedback = (data.get("feedback") or "").strip()
            if not feedback:
                raise CardFormError({"feedback": ["write your feedback first"]})
            return "resolved", {"decision": "respond", "feedback": feedback}
        if decision == "edit":
            return "resolved", {"decision": "edit", "edited": _edited(request, data)}
        raise CardFormError({"decision": ["choose an action"]})
    raise CardFormError({"type": [f"unknown interaction kind {kind!r}"]})

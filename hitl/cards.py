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

from hitl import policies, schema_form
from hitl.models import AgentInterrupt
from hitl.schema_form import humanize

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


# --- form values ------------------------------------------------------------------------------

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
        # The service reports an edit against the schema as "edited": "<field>: ...":
        # each message goes under its field (plain words come from the form's own check).
        for message in list(errors.get("edited", [])):
            head = message.split(":", 1)[0].split("/")[0]
            if head and head in ((request.get("editSchema") or {}).get("properties") or {}):
                errors[f"edited.{head}"].append(message)
                errors["edited"].remove(message)
        fields = schema_form.fields(request.get("editSchema"), name="edited",
                                    dom_id=f"{card['dom_id']}-edit", initial=proposal,
                                    posted=values, errors=errors, focus=True)
        if fields is not None:
            known.update(f["input_name"] for f in fields)
        card["edit_fields"] = fields
        posted_json = _posted(values, "edited_json")
        card["edit_json"] = posted_json if posted_json is not None else json.dumps(
            proposal, indent=2, ensure_ascii=False)
        card["reason_value"] = _posted(values, "reason") or ""
        card["feedback_value"] = _posted(values, "feedback") or ""
    card["other_errors"] = [m for k, msgs in errors.items() if k not in known
                            for m in ([f"{k}: {x}" for x in msgs]
                                      if k not in ("payload", "__all__", "detail") else msgs)]
    card["focus"] = _focus(card, errors)
    if not pending:
        decider = interrupt.decided_by
        card["decided_by"] = getattr(decider, "username", "") if decider else ""
        card["decided_at"] = interrupt.decided_at
        # A run that ends (fails, is cancelled) before a segment applies an answer closes
        # it as cancelled with the decision kept: it was still answered, by that person.
        answered_then_closed = (interrupt.status == AgentInterrupt.Status.CANCELLED
                                and interrupt.decision is not None and decider is not None)
        card["not_applied"] = answered_then_closed
        if interrupt.status in (AgentInterrupt.Status.DECIDED, AgentInterrupt.Status.APPLIED) \
                or answered_then_closed:
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


# Where focus returns after a refused answer: the first field in error, in the card's order.
FOCUS_ORDER = ("value", "values", "action", "edited", "edited_json", "reason", "feedback",
               "decision")


def _focus(card: dict[str, Any], errors: dict[str, list[str]]) -> str:
    """The name of the card's field to focus (``autofocus``), "card" for the card's own
    error list, or "" when nothing was refused."""
    if any(f["autofocus"] for f in card.get("edit_fields") or []):
        return "edited"
    for name in FOCUS_ORDER:
        if errors.get(name):
            return name
    return "card" if card["other_errors"] else ""


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

def _edited(request: dict[str, Any], data: Any) -> dict[str, Any]:
    schema = request.get("editSchema")
    try:
        if not schema_form.is_form(schema):
            edited = schema_form.json_from_post(data, "edited_json")
            if not isinstance(edited, dict):
                raise CardFormError({"edited_json": ["The proposal must be a JSON object"]})
            return edited
        edited = schema_form.value_from_post(schema, data, name="edited")
    except schema_form.FormProblems as err:
        raise CardFormError(err.fields) from None
    # Checked here too (the service checks again) for errors in plain words per field.
    problems = schema_form.plain_errors(schema, edited, name="edited")
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


# --- form → decide → errors (the chat pages and the admin decide page) -------------------------

def article(noun: str) -> str:
    """ "a review", "an input question": the indefinite article a label takes."""
    word = noun.strip()
    vowel = word[:1].lower() in "aeiou" and not word.lower().startswith(("uni", "use", "one"))
    return f"{'an' if vowel else 'a'} {word}"


def late_answer_message(interrupt: AgentInterrupt, err: Any, actor: Any) -> str:
    """Why an answer arrived too late, naming the question and who answered it."""
    question = interrupt.message or KIND_LABELS.get(interrupt.kind, "this question")
    answered = interrupt.status != AgentInterrupt.Status.PENDING and interrupt.decided_by_id
    if answered:
        # Whatever the service noticed first (the run resumed, the row is decided).
        who = ("you, in another tab" if interrupt.decided_by_id == getattr(actor, "pk", None)
               else interrupt.decided_by.get_username())
        return f"“{question}” was already answered by {who}."
    if err.code in ("already_decided", "not_pending"):
        return f"“{question}” was already answered."
    if err.code == "expired" or interrupt.status == AgentInterrupt.Status.EXPIRED:
        return f"“{question}” expired before your answer arrived."
    if err.code == "run_not_paused":
        return f"The run moved on before your answer to “{question}” arrived."
    return str(err.detail)


def decide_from_post(*, actor: Any, interrupt: AgentInterrupt, data: Any,
                     surface: str) -> tuple[dict[str, list[str]] | None, int, bool]:
    """Answer ``interrupt`` from its card's form post, as ``actor``.

    Returns (errors, HTTP status, keep_values): (None, 200, False) when recorded; else the
    card's errors by field, the status the refusal means (400: fix the form; 403, 409, 410:
    the card turns read-only and says why), and whether to show the posted values again.
    """
    from agentsite.errors import InvalidInput, ServiceError
    from hitl.services import interrupt_decide

    try:
        status, payload = answer_from_post(interrupt.request, data)
        interrupt_decide(actor=actor, run_id=interrupt.run_id,
                         interrupt_id=interrupt.interrupt_id, payload=payload,
                         status=status, surface=surface)
    except CardFormError as err:
        return err.fields, 400, True
    except InvalidInput as err:
        return err.fields or {"__all__": [err.detail]}, 400, True
    except ServiceError as err:
        # Someone answered first, the run moved on, the deadline passed, or a policy
        # (four-eyes, assignment) refuses: read the row again to say who and what.
        interrupt.refresh_from_db(fields=["status", "decided_by", "decided_at", "decision"])
        return {"__all__": [late_answer_message(interrupt, err, actor)]}, err.status, False
    return None, 200, False

"""Review cards: the frame every card shares, and what a card's form post means.

Shared by every HTML surface (chat pages, admin queue). What a card shows and how its form
post becomes an answer belong to the interrupt's format (``hitl.formats``: ``template``,
``card_context``, ``answer_from_post``, ``summary``); here is only what all cards share:
who may answer, the state line, errors placed beside their fields with the focus on the
first one, and a post read as (status, answer). Pure: no queries beyond the interrupt's
own relations, no writes (``hitl.card_answer`` sends a post to the answer service).

Inputs a format renders as field dicts (``input_name``, ``kind``, ``label``, ``value``;
see ``hitl/cards/_fields.html``) get their id, errors and ``autofocus`` here. Any card:
``_status`` = cancelled cancels the question (AG-UI status "cancelled"): its format's
decline, or the run's cancel when it has none (the card's Cancel button says which).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from hitl import policies
from hitl.card_parts import readable  # noqa: F401 - what the pages show a run's result with
from hitl.formats import CANCELS_RUN, CardFormError, for_interrupt
from hitl.models import AgentInterrupt
from hitl.schema_form import FormProblems, humanize  # noqa: F401 - pages.forms reads humanize

__all__ = ["CardFormError", "answer_from_post", "article", "card_context",
           "decision_summary", "late_answer_message", "readable"]

# Error names that are the whole answer's, shown at the card's top as they are.
WHOLE = ("payload", "__all__", "detail", "claim")  # claim: hitl.card_answer.over_claim


def decision_summary(interrupt: AgentInterrupt, decision: Any) -> str:
    """One line saying what was answered."""
    return for_interrupt(interrupt).summary(decision)


# --- form values ------------------------------------------------------------------------------

def _plain(values: Any) -> dict[str, Any]:
    """A posted form (QueryDict or dict) as a dict: repeated fields as lists."""
    if not values:
        return defaultdict(str)
    if hasattr(values, "lists"):
        return defaultdict(str, {k: v if len(v) > 1 or k == "values" else v[0]
                                 for k, v in values.lists() if k != "csrfmiddlewaretoken"})
    return defaultdict(str, values)


def _fields(node: Any) -> Iterator[dict[str, Any]]:
    """The field dicts of a card context, in the order the template shows them."""
    if isinstance(node, dict):
        if "input_name" in node and "kind" in node:
            yield node
            return
        for value in node.values():
            yield from _fields(value)
    elif isinstance(node, list):
        for value in node:
            yield from _fields(value)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")


def _place_errors(card: dict[str, Any], errors: dict[str, list[str]], dom_id: str) -> set[str]:
    """Give each field dict its id and errors; move errors the service names otherwise
    ("edited": "title: ...", or a format's ``error_aliases``) to their field. Returns the
    names shown beside a field."""
    fields = list(_fields({k: v for k, v in card.items() if k not in ("posted", "request")}))
    names = {f["input_name"] for f in fields}
    inline = set(card.get("inline_errors") or ())
    aliases = card.get("error_aliases") or {}
    for key in list(errors):
        if key in names or key in inline:
            continue
        for message in list(errors[key]):
            head = message.split(":", 1)[0].strip().split("/")[0]
            target = f"{key}.{head}" if f"{key}.{head}" in names else None
            if target is None:
                prefixes = [p for p in aliases if key == p or key.startswith(p + ".")]
                target = aliases[max(prefixes, key=len)] if prefixes else None
            if target is not None and (target in names or target in inline):
                errors[target].append(message)
                errors[key].remove(message)
        if not errors[key]:
            del errors[key]
    first = None
    for field in fields:
        field["id"] = f"{dom_id}-{_slug(field['input_name'])}"
        field["errors_id"] = f"{field['id']}-errors"
        field["errors"] = list(errors.get(field["input_name"], []))
        field["autofocus"] = False
        if first is None and field["errors"]:
            first = field
    if first is not None:
        first["autofocus"] = True
    return names | inline


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
    fmt = for_interrupt(interrupt)
    values = _plain(values)
    errors = _error_lists(errors)
    pending = interrupt.status == AgentInterrupt.Status.PENDING
    waiting_for_reviewer = pending and _waits_for_reviewer(interrupt, viewer)
    if waiting_for_reviewer or (pending and viewer is not None
                                and not policies.may_decide(viewer, interrupt)):
        can_answer = False
    dom_id = f"card-{_slug(interrupt.interrupt_id)}"
    frame: dict[str, Any] = {
        "interrupt_id": interrupt.interrupt_id,
        "run_id": str(interrupt.run_id),
        "dom_id": dom_id,
        "kind": interrupt.kind,
        "kind_label": fmt.label,
        "template": fmt.template,
        "message": fmt.message(),
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
        **_cancel_button(fmt),
    }
    card = {**fmt.card_context(None if pending else interrupt.decision, values), **frame}
    shown = _place_errors(card, errors, dom_id)
    card["other_errors"] = [m for k, msgs in errors.items() if k not in shown
                            for m in (msgs if k in WHOLE else [f"{k}: {x}" for x in msgs])]
    card["focus"] = _focus(card, errors)
    if pending:
        card["state_label"] = ("Waiting for a reviewer" if waiting_for_reviewer
                               else "Waiting for an answer" if can_answer
                               else "Waiting (read-only)")
    else:
        card.update(_outcome(interrupt, fmt))
    return card


def _error_lists(errors: dict[str, Any] | None) -> defaultdict[str, list[str]]:
    """Each name's messages as a list, in a defaultdict: a template asking for a field
    with no errors gets [] (a plain dict would fall back to attributes, and
    ``errors.values`` is a method)."""
    return defaultdict(list, {k: list(v) if isinstance(v, (list, tuple)) else [str(v)]
                              for k, v in (errors or {}).items()})


def _waits_for_reviewer(interrupt: AgentInterrupt, viewer: Any) -> bool:
    """Four-eyes (hitl.policies) keeps the requester's card read-only ("waiting for a
    reviewer"); with no ``viewer`` the card assumes the requester views it."""
    return not interrupt.requester_may_decide and (
        viewer is None or getattr(viewer, "pk", None) == interrupt.run.owner_id)


def _outcome(interrupt: AgentInterrupt, fmt: Any) -> dict[str, Any]:
    """What a card no longer pending says: who answered and when, what, and its state."""
    decider = interrupt.decided_by
    # A run that ends (fails, is cancelled) before a segment applies an answer closes
    # it as cancelled with the decision kept: it was still answered, by that person.
    answered_then_closed = (interrupt.status == AgentInterrupt.Status.CANCELLED
                            and interrupt.decision is not None and decider is not None)
    # Answered and given to a segment that failed (``execution.lifecycle.run_fail``
    # keeps such an answer decided): the agent had it; a retry goes on from there.
    run = interrupt.run if AgentInterrupt.run.is_cached(interrupt) else None
    out: dict[str, Any] = {
        "decided_by": getattr(decider, "username", "") if decider else "",
        "decided_at": interrupt.decided_at,
        "not_applied": answered_then_closed,
        "used_then_failed": (interrupt.status == AgentInterrupt.Status.DECIDED
                             and run is not None and run.status == "failed"),
    }
    if interrupt.status in (AgentInterrupt.Status.DECIDED, AgentInterrupt.Status.APPLIED) \
            or answered_then_closed:
        return {**out, "summary": fmt.summary(interrupt.decision), "state_label": "Answered"}
    if interrupt.status == AgentInterrupt.Status.CANCELLED:
        return {**out, "summary": "Cancelled", "state_label": "Cancelled"}
    return {**out, "summary": "Expired before anyone answered", "state_label": "Expired"}


def _cancel_button(fmt: Any) -> dict[str, str]:
    """What the card's Cancel button says it does: the format's decline, or, for a
    question with none, the run's cancel (``hitl.decide``)."""
    if fmt.cancelled_value() is CANCELS_RUN:
        return {"cancel_label": "Cancel the run",
                "cancel_help": "This question has no way to decline it: cancelling it "
                               "cancels the whole run."}
    return {"cancel_label": "Cancel this question",
            "cancel_help": "Declines it: the agent is told it was cancelled by you."}


def _focus(card: dict[str, Any], errors: dict[str, list[str]]) -> str:
    """What gets ``autofocus``: "field" (a field dict has it), a name of the card's own
    template (the first in error of the format's ``inline_errors``, which it lists in
    focus order), "card" for the card's error list, or "" when nothing was refused."""
    if any(f.get("autofocus") for f in _fields(
            {k: v for k, v in card.items() if k not in ("posted", "request")})):
        return "field"
    for name in card.get("inline_errors") or ():
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


# --- form → decide → errors (the chat pages and the admin decide page) -------------------------

def answer_from_post(interrupt: AgentInterrupt, data: Any) -> tuple[str, Any]:
    """(status, answer) from a card's form post; CardFormError for what the form cannot say.

    ``data`` is a QueryDict. The answer is the format's (checked again by the service).
    """
    if data.get("_status") == "cancelled":
        return "cancelled", None
    try:
        return "resolved", for_interrupt(interrupt).answer_from_post(data)
    except FormProblems as err:
        raise CardFormError(err.fields) from None


def article(noun: str) -> str:
    """ "a review", "an input question": the indefinite article a label takes."""
    word = noun.strip()
    vowel = word[:1].lower() in "aeiou" and not word.lower().startswith(("uni", "use", "one"))
    return f"{'an' if vowel else 'a'} {word}"


def late_answer_message(interrupt: AgentInterrupt, err: Any, actor: Any) -> str:
    """Why an answer arrived too late, naming the question and who answered it."""
    question = interrupt.message or "this question"
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

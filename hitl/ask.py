"""Asking a person from a graph node: the ``hitl_*`` helpers, thin wrappers over
LangGraph ``interrupt()``. This is the API agents use.

Each builds a request payload of one interaction kind (no id: LangGraph assigns
it), pauses the graph, and on resume returns the validated answer. A node that
calls one of these must be free of side effects before the call: LangGraph
re-executes the node from its start when it resumes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict, Unpack

from langgraph.types import interrupt

from hitl import kinds, policies


class Ask(TypedDict, total=False):
    """Who may answer and by when (every helper takes these; see ``hitl.policies``).

    assignees / groups: only these users / members of these groups decide (or a user
    with ``hitl.override_assignment``); requester_may_decide=False: four-eyes, the run's
    owner may not answer; required_approvals / reject_policy: quorum (approval and
    review only); timeout: seconds until the deadline; default: the answer the run
    resumes with at the deadline (validated here, against the request); escalate_after
    (seconds) + escalate_to (group names): groups added as assignees when it passes.
    """

    assignees: list[str]
    groups: list[str]
    requester_may_decide: bool
    required_approvals: int
    reject_policy: str
    timeout: float
    default: Any
    escalate_after: float
    escalate_to: list[str]


def _ask(request: dict[str, Any], expires_at: datetime | None = None,
         policy: Ask | None = None) -> dict[str, Any]:
    payload = {k: v for k, v in request.items() if v is not None}
    if expires_at is not None:
        payload["expiresAt"] = expires_at.isoformat()
    parsed = kinds.parse_request(payload)  # a malformed request is a bug in the graph: fail here
    wire = policies.request_policy(payload["type"], dict(policy or {}))
    if wire:
        payload["policy"] = wire
    if "default" in wire:
        # A default that does not answer the question is a bug in the graph: fail here.
        wire["default"] = parsed.validate_answer(wire["default"])
    answer = interrupt(payload)
    if policies.is_quorum_answer(payload, answer):
        return answer
    if answer == kinds.CANCELLED_RESUME and payload["type"] != "approval":
        # A cancelled approval is a "no"; a cancelled review is a reject where allowed;
        # any other cancelled question ends the run as cancelled.
        if payload["type"] == "review" and "reject" in payload["allowed"]:
            return {"decision": "reject", "reason": answer["reason"]}
        raise kinds.HitlCancelled(f"{payload['type']} question cancelled by the user")
    # The server validated the answer already; validate again so a graph never acts
    # on a payload that slipped past (e.g. a resume written by hand to the checkpoint).
    return parsed.validate_answer(answer)


def _options(options: list[Any]) -> list[dict[str, str]]:
    out = []
    for opt in options:
        if isinstance(opt, dict):
            out.append({"label": str(opt["label"]), "value": str(opt["value"])})
        else:
            out.append({"label": str(opt), "value": str(opt)})
    return out


def hitl_input(message: str, *, placeholder: str | None = None, reason: str | None = None,
               expires_at: datetime | None = None, **policy: Unpack[Ask]) -> str:
    return _ask({"type": "input", "message": message, "placeholder": placeholder,
                 "reason": reason}, expires_at, policy)["value"]


def hitl_select(message: str, options: list[Any], *, reason: str | None = None,
                expires_at: datetime | None = None, **policy: Unpack[Ask]) -> str:
    return _ask({"type": "select", "message": message, "options": _options(options),
                 "reason": reason}, expires_at, policy)["value"]


def hitl_multi_select(message: str, options: list[Any], *, min: int | None = None,
                      max: int | None = None, reason: str | None = None,
                      expires_at: datetime | None = None,
                      **policy: Unpack[Ask]) -> list[str]:
    return _ask({"type": "multiSelect", "message": message, "options": _options(options),
                 "min": min, "max": max, "reason": reason}, expires_at, policy)["values"]


def hitl_modal(title: str, body: str, actions: list[Any], *, message: str = "",
               reason: str | None = None, expires_at: datetime | None = None,
               **policy: Unpack[Ask]) -> str:
    return _ask({"type": "modal", "title": title, "body": body, "message": message or title,
                 "actions": _options(actions), "reason": reason}, expires_at, policy)["action"]


def hitl_approval(message: str, *, details: Any = None, reason: str | None = None,
                  expires_at: datetime | None = None,
                  **policy: Unpack[Ask]) -> dict[str, Any]:
    return _ask({"type": "approval", "message": message, "details": details,
                 "reason": reason}, expires_at, policy)


def hitl_unlock(message: str, *, key: str, reason: str | None = None,
                expires_at: datetime | None = None, **policy: Unpack[Ask]) -> None:
    _ask({"type": "unlock", "message": message, "key": key, "reason": reason},
         expires_at, policy)


def hitl_review(message: str, *, proposal: dict[str, Any], allowed: list[str] | None = None,
                edit_schema: dict[str, Any] | None = None, reason: str | None = None,
                tool: str | None = None, expires_at: datetime | None = None,
                **policy: Unpack[Ask]) -> dict[str, Any]:
    return _ask({"type": "review", "message": message, "proposal": proposal,
                 "allowed": allowed or ["approve", "edit", "reject", "respond"],
                 "editSchema": edit_schema, "reason": reason, "tool": tool}, expires_at, policy)

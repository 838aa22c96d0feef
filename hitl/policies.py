"""Who may decide an interrupt, and by when: assignment, four-eyes, quorum, deadlines,
escalation and standing approvals.

A graph asks with a ``hitl_*`` helper (``hitl.ask``), which puts what it was given under
``request["policy"]`` (camelCase, like the rest of the request). When the worker opens the
interrupt, those values win over the agent's defaults (``runs.registry.Policy``) and the
result is stored on the row (``effective`` → ``hitl.lifecycle.interrupts_open``). The
decision service enforces them (``refusal``, ``vote_of``, ``settled``), so every surface
(REST, AG-UI, chat pages, admin) obeys the same rules. Pure functions: no writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agentsite.errors import Forbidden, InvalidInput

OVERRIDE_PERMISSION = "hitl.override_assignment"
REJECT_POLICIES = ("any", "quorum")
QUORUM_KINDS = ("approval", "review")
# The audit label of answers given by a deadline and of standing approvals.
TIMEOUT_ACTOR = "timeout"


# --- the graph's side: what a helper was given, checked and put on the wire ----------------

def _names(value: Any, what: str) -> list[str]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{what} must be a list of non-empty names")
    return list(value)


def _seconds(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{what} must be a positive number of seconds")
    return float(value)


def request_policy(kind: str, given: dict[str, Any]) -> dict[str, Any]:
    """The ``policy`` entry of a request from a helper's keyword arguments (ValueError:
    a bug in the graph, raised where it asks)."""
    wire: dict[str, Any] = {}
    if "assignees" in given:
        wire["assignees"] = _names(given["assignees"], "assignees")
    if "groups" in given:
        wire["groups"] = _names(given["groups"], "groups")
    if "requester_may_decide" in given:
        wire["requesterMayDecide"] = bool(given["requester_may_decide"])
    if "required_approvals" in given:
        n = given["required_approvals"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError("required_approvals must be a whole number ≥ 1")
        if n > 1 and kind not in QUORUM_KINDS:
            raise ValueError(f"required_approvals is for approval and review, not {kind}")
        wire["requiredApprovals"] = n
    if "reject_policy" in given:
        if given["reject_policy"] not in REJECT_POLICIES:
            raise ValueError(f"reject_policy must be one of {REJECT_POLICIES}")
        wire["rejectPolicy"] = given["reject_policy"]
    if "timeout" in given:
        wire["timeout"] = _seconds(given["timeout"], "timeout")
    if "default" in given:
        wire["default"] = given["default"]
    if "escalate_after" in given:
        wire["escalateAfter"] = _seconds(given["escalate_after"], "escalate_after")
    if "escalate_to" in given:
        wire["escalateTo"] = _names(given["escalate_to"], "escalate_to")
    return wire


def is_quorum_answer(request: dict[str, Any], answer: Any) -> bool:
    """Is ``answer`` the settled outcome of a quorum (``{approved, votes}``)? The quorum
    may come from the agent's policy, so the request need not say so; a person's answer
    never has ``votes`` (the server refuses unknown keys)."""
    return (request.get("type") in QUORUM_KINDS and isinstance(answer, dict)
            and isinstance(answer.get("votes"), list)
            and isinstance(answer.get("approved"), bool))


# --- the worker's side: the rules an interrupt is opened with -------------------------------

@dataclass(frozen=True)
class Effective:
    assignees: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    requester_may_decide: bool = True
    required_approvals: int = 1
    reject_policy: str = "any"
    expires_at: datetime | None = None
    default: Any = None
    escalate_at: datetime | None = None
    escalate_to: tuple[str, ...] = ()


def _format(request: Any) -> Any:
    from hitl.formats import InterruptFormat, recognise

    return request if isinstance(request, InterruptFormat) else recognise(request)


def effective(request: Any, agent_policy: Any, now: datetime) -> Effective:
    """The request's own policy (a ``hitl_*`` helper's) over the agent's
    (``runs.registry.Policy``); ``request``: a raw value or its ``hitl.formats`` format.
    A quorum applies only to formats whose answers can be votes."""
    fmt = _format(request)
    wire = fmt.policy()

    def pick(key: str, attr: str) -> Any:
        return wire[key] if key in wire else getattr(agent_policy, attr, None)

    timeout = pick("timeout", "timeout")
    escalate_after = pick("escalateAfter", "escalate_after")
    required = int(pick("requiredApprovals", "required_approvals") or 1)
    if not fmt.quorum:
        required = 1
    requester = pick("requesterMayDecide", "requester_may_decide")
    return Effective(
        assignees=tuple(pick("assignees", "assignees") or ()),
        groups=tuple(pick("groups", "groups") or ()),
        requester_may_decide=True if requester is None else bool(requester),
        required_approvals=required,
        reject_policy=pick("rejectPolicy", "reject_policy") or "any",
        expires_at=now + timedelta(seconds=float(timeout)) if timeout else None,
        default=wire.get("default"),
        escalate_at=now + timedelta(seconds=float(escalate_after)) if escalate_after else None,
        escalate_to=tuple(pick("escalateTo", "escalate_to") or ()),
    )


# --- the decision service's side ----------------------------------------------------------------

def assigned_names(interrupt: Any) -> tuple[list[str], list[str]]:
    """(usernames, group names) assigned to the interrupt."""
    return ([u.get_username() for u in interrupt.assignees.all()],
            [g.name for g in interrupt.assigned_groups.all()])


def assignment(interrupt: Any) -> tuple[set[int], set[int]]:
    """(user ids, group ids) assigned to the interrupt: from the id arrays the decision
    service's locking query annotates (``hitl.selectors.ASSIGNMENT_IDS``), else from the
    relations (prefetched by whoever shows a list)."""
    users = getattr(interrupt, "assignee_ids", None)
    if users is not None:
        return set(users), set(getattr(interrupt, "group_ids", None) or ())
    return ({u.pk for u in interrupt.assignees.all()},
            {g.pk for g in interrupt.assigned_groups.all()})


def is_assigned(user: Any, interrupt: Any) -> bool:
    """Is ``user`` one of the interrupt's assignees, or in one of its groups?"""
    users, groups = assignment(interrupt)
    if user.pk in users:
        return True
    return bool(groups) and user.groups.filter(pk__in=groups).exists()


def has_assignees(interrupt: Any) -> bool:
    users, groups = assignment(interrupt)
    return bool(users or groups)


def refusal(user: Any, interrupt: Any, run: Any) -> Forbidden | None:
    """Why ``user`` (who may decide the run's interrupts at all) may not decide this one."""
    if not interrupt.requester_may_decide and run.owner_id == user.pk:
        return Forbidden(f"interrupt {interrupt.interrupt_id} needs a reviewer other than "
                         "the requester (four-eyes)", code="requester_may_not_decide")
    if has_assignees(interrupt) and not is_assigned(user, interrupt) \
            and not user.has_perm(OVERRIDE_PERMISSION):
        return Forbidden(f"interrupt {interrupt.interrupt_id} is assigned to someone else",
                         code="not_assigned")
    return None


def may_decide(user: Any, interrupt: Any) -> bool:
    """For showing (no lock): would the decision service let ``user`` answer this one?"""
    return bool(user and user.is_authenticated) and refusal(user, interrupt,
                                                            interrupt.run) is None


def vote_of(fmt: Any, payload: Any) -> tuple[bool, str]:
    """(approved, reason) of a validated answer given as a quorum vote (``fmt``: the
    interrupt's ``hitl.formats`` format)."""
    vote = fmt.vote(payload)
    if vote is None:
        field = {"review": "decision", "approval": "approved"}.get(fmt.name, "payload")
        raise InvalidInput("an interrupt that needs several approvals takes approve or reject",
                           code="invalid_payload",
                           fields={field: ["approve or reject (this needs a quorum)"]})
    return vote.approved, vote.reason


def settled(interrupt: Any, votes: list[Any]) -> Any:
    """The outcome the graph receives once the votes settle it, else None."""
    approvals = sum(1 for v in votes if v.approved)
    rejections = len(votes) - approvals
    needed_rejections = 1 if interrupt.reject_policy == "any" else interrupt.required_approvals
    if approvals >= interrupt.required_approvals:
        approved = True
    elif rejections >= needed_rejections:
        approved = False
    else:
        return None
    from hitl.formats import for_interrupt

    return for_interrupt(interrupt).quorum_answer(approved, [
        {"user": v.username, "approved": v.approved, "reason": v.reason} for v in votes])


def tally(required: int, approvals: int) -> str:
    """What cards and the queue show: "2 of 3 approvals"."""
    return f"{approvals} of {required} approval{'' if required == 1 else 's'}"


# --- standing approvals ---------------------------------------------------------------------

def standing_matches(rule: Any, *, agent: str, request: Any, now: datetime) -> bool:
    """Does an auto-approval rule approve this request (a raw value or its format)? It
    must match every subject the format names (a batch of tool calls: each of them).
    Revoked or expired rules never do."""
    if rule.revoked_at is not None or (rule.expires_at is not None and rule.expires_at <= now):
        return False
    if rule.agent != agent:
        return False
    subjects = _format(request).subjects()
    return bool(subjects) and all(_subject_matches(rule, s) for s in subjects)


def _subject_matches(rule: Any, subject: Any) -> bool:
    if rule.kind != subject.kind or (rule.kind == "tool" and subject.tool != rule.tool_name):
        return False
    if rule.args_match:
        if not isinstance(subject.args, dict):
            return False
        return all(k in subject.args and subject.args[k] == v
                   for k, v in rule.args_match.items())
    return True


def standing_answer(request: Any, rule: Any, required: int = 1) -> Any:
    """The answer a standing approval gives (``required``: the interrupt's quorum, which
    it settles as approved, with no votes)."""
    fmt = _format(request)
    if required > 1:
        return fmt.quorum_answer(True, [])
    return fmt.approve_answer(because=f"standing approval #{rule.pk}")

"""The pure rules of hitl.policies, in-process: what helpers accept, how votes settle,
which standing approvals match."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from hitl import policies
from runs.registry import Policy


def test_request_policy_checks_what_the_graph_gives():
    assert policies.request_policy("approval", {"assignees": ["a"], "timeout": 5,
                                                "required_approvals": 2}) == {
        "assignees": ["a"], "timeout": 5.0, "requiredApprovals": 2}
    for bad in ({"assignees": "a"}, {"timeout": 0}, {"required_approvals": 0},
                {"reject_policy": "some"}, {"escalate_to": [""]}):
        with pytest.raises(ValueError):
            policies.request_policy("approval", bad)
    with pytest.raises(ValueError, match="approval and review"):
        policies.request_policy("input", {"required_approvals": 2})


def test_request_policy_wins_over_the_agent_policy():
    now = timezone.now()
    agent = Policy(groups=("legal",), requester_may_decide=False, timeout=60)
    mine = policies.effective({"type": "approval", "policy": {"timeout": 1}}, agent, now)
    assert mine.groups == ("legal",) and mine.requester_may_decide is False
    assert mine.expires_at == now + timedelta(seconds=1)
    plain = policies.effective({"type": "input"}, None, now)
    assert plain == policies.Effective()


def _votes(*approved: bool):
    return [SimpleNamespace(username=f"u{i}", approved=a, reason="") for i, a in
            enumerate(approved)]


@pytest.mark.parametrize("required, reject_policy, votes, outcome", [
    (3, "any", (True, True), None),
    (3, "any", (True, True, True), True),
    (3, "any", (True, False), False),
    (2, "quorum", (False,), None),
    (2, "quorum", (False, True, False), False),
])
def test_votes_settle(required, reject_policy, votes, outcome):
    row = SimpleNamespace(required_approvals=required, reject_policy=reject_policy,
                          kind="approval")
    settled = policies.settled(row, _votes(*votes))
    assert (settled and settled["approved"]) if outcome else (
        settled is None if outcome is None else settled["approved"] is False)


def _rule(**kw):
    base = {"agent": "a", "kind": "approval", "tool_name": "", "args_match": None,
            "expires_at": None, "revoked_at": None, "pk": 1}
    return SimpleNamespace(**{**base, **kw})


def test_standing_matches():
    now = timezone.now()
    approval = {"type": "approval", "details": {"amount": 5}}
    tool = {"type": "review", "reason": "tool_approval", "tool": "t", "proposal": {"x": 1},
            "allowed": ["approve"]}
    assert policies.standing_matches(_rule(), agent="a", request=approval, now=now)
    assert not policies.standing_matches(_rule(), agent="b", request=approval, now=now)
    assert not policies.standing_matches(_rule(revoked_at=now), agent="a", request=approval,
                                         now=now)
    assert not policies.standing_matches(_rule(expires_at=now), agent="a", request=approval,
                                         now=now)
    assert policies.standing_matches(_rule(args_match={"amount": 5}), agent="a",
                                     request=approval, now=now)
    assert not policies.standing_matches(_rule(args_match={"amount": 6}), agent="a",
                                         request=approval, now=now)
    assert policies.standing_matches(_rule(kind="tool", tool_name="t"), agent="a",
                                     request=tool, now=now)
    assert not policies.standing_matches(_rule(kind="review"), agent="a", request=tool, now=now)
    assert not policies.standing_matches(_rule(kind="tool", tool_name="u"), agent="a",
                                         request=tool, now=now)

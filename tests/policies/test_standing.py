"""Standing approvals: a reviewer grants a rule in the admin; the worker approves a
matching interrupt when the run pauses and the run resumes; the audit row names the rule
and the grantor; revocation applies to the next interrupt; an expired rule never matches."""

from __future__ import annotations

from datetime import timedelta

from django.test import Client
from django.utils import timezone

from hitl.models import AgentInterrupt, StandingApproval
from runs.models import AuditLog
from tests.helpers import start_run, wait_run
from tests.policies.conftest import ask


def _admin(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_granted_in_the_admin_approves_then_revoked(client_of, people):
    admin = _admin(people["alice"])
    r = admin.post("/admin/hitl/standingapproval/add/", {
        "agent": "policy_ask", "kind": "approval", "tool_name": "", "args_match": "null",
        "expires_at_0": "", "expires_at_1": "", "note": "routine"})
    assert r.status_code == 302, r.content.decode()[:2000]
    rule = StandingApproval.objects.get()
    assert rule.granted_by == people["alice"]
    owner = client_of("owner")
    run = start_run(owner, "policy_ask", input={"kind": "approval"})
    done = wait_run(owner, run["id"], "completed")
    assert done["result"]["answer"] == {"approved": True,
                                        "reason": f"standing approval #{rule.pk}"}
    row = AgentInterrupt.objects.get(run_id=run["id"])
    assert row.status == "applied" and row.decided_by == people["alice"]
    audit = AuditLog.objects.get(run_id=run["id"], action="decision")
    assert audit.surface == "standing_approval" and audit.actor_label == "alice"
    assert audit.payload["standing_approval"] == rule.pk and audit.payload["grantor"] == "alice"
    # Revoked: the next interrupt waits for a person.
    admin.post("/admin/hitl/standingapproval/", {"action": "revoke_selected",
                                                 "_selected_action": [rule.pk]})
    rule.refresh_from_db()
    assert rule.revoked_at is not None and rule.revoked_by == people["alice"]
    paused = ask(owner)
    assert paused["pending_interrupts"][0]["status"] == "pending"


def test_expired_rule_never_matches(client_of, people):
    StandingApproval.objects.create(agent="policy_ask", kind="approval",
                                    granted_by=people["alice"],
                                    expires_at=timezone.now() - timedelta(seconds=1))
    run = ask(client_of("owner"))
    assert len(run["pending_interrupts"]) == 1


def test_tool_approval_with_argument_match(client_of, people):
    rule = StandingApproval.objects.create(
        agent="policy_ask", kind="tool", tool_name="file_ticket",
        args_match={"priority": "low"}, granted_by=people["boss"])
    owner = client_of("owner")
    run = start_run(owner, "policy_ask", input={"kind": "tool", "details": {
        "title": "printer", "priority": "low"}})
    done = wait_run(owner, run["id"], "completed")
    assert done["result"]["answer"] == {"decision": "approve"}
    assert AuditLog.objects.get(run_id=run["id"], action="decision").payload[
        "standing_approval"] == rule.pk
    # Other arguments, another tool, or an approval of another kind: a person decides.
    for given in ({"kind": "tool", "details": {"title": "x", "priority": "high"}},
                  {"kind": "tool", "tool": "delete_all", "details": {"priority": "low"}},
                  {"kind": "review", "details": {"priority": "low"}}):
        paused = wait_run(owner, start_run(owner, "policy_ask", input=given)["id"], "paused")
        assert len(paused["pending_interrupts"]) == 1
        owner.post(f"/api/runs/{paused['id']}/cancel/")

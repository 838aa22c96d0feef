"""Quorum: N distinct approvers, one vote per user under the run's lock, one rejection
rejects by default (``reject_policy``), the run resumes once with
``{approved, votes: [{user, approved, reason}]}``; cards and the queue show the tally."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from django.test import Client

from hitl.models import InterruptVote
from runs.models import AgentRun, AuditLog
from tests.helpers import pending, wait_run
from tests.policies.conftest import ask

YES = {"approved": True}


def _vote(client, item, payload):
    return client.post(f"/api/interrupts/{item['id']}/decision/", json={"payload": payload})


def test_three_concurrent_voters_resume_once(client_of):
    owner = client_of("owner")
    run = ask(owner, required_approvals=3)
    item = pending(run)
    assert item["approvals"] == {"approvals": 0, "rejections": 0, "required": 3,
                                 "label": "0 of 3 approvals"}
    voters = [client_of(name) for name in ("alice", "bob", "carol")]
    with ThreadPoolExecutor(3) as pool:
        codes = list(pool.map(lambda c: _vote(c, item, YES).status_code, voters))
    assert codes == [202, 202, 202]
    done = wait_run(owner, run["id"], "completed")
    answer = done["result"]["answer"]
    assert answer["approved"] is True
    assert sorted(v["user"] for v in answer["votes"]) == ["alice", "bob", "carol"]
    assert all(v["approved"] is True and v["reason"] == "" for v in answer["votes"])
    # Resumed once: one more segment, one move to resuming.
    assert AgentRun.objects.get(pk=run["id"]).segments == 2
    assert AuditLog.objects.filter(run_id=run["id"], to_status="resuming").count() == 1
    assert InterruptVote.objects.filter(interrupt_id=item["id"]).count() == 3


def test_duplicate_vote_is_refused_and_tally_shown(client_of, people):
    owner = client_of("owner")
    run = ask(owner, required_approvals=2)
    item = pending(run)
    alice = client_of("alice")
    assert _vote(alice, item, YES).status_code == 202
    again = _vote(alice, item, {"approved": False, "reason": "changed my mind"})
    assert (again.status_code, again.json()["code"]) == (409, "already_voted")
    assert InterruptVote.objects.filter(interrupt_id=item["id"]).count() == 1
    shown = owner.get(f"/api/runs/{run['id']}/").json()
    assert shown["status"] == "paused"
    assert pending(shown)["approvals"]["label"] == "1 of 2 approvals"
    bob = Client()
    bob.force_login(people["bob"])
    assert "1 of 2 approvals" in bob.get("/admin/hitl/agentinterrupt/").content.decode()
    assert "1 of 2 approvals" in bob.get(
        f"/admin/hitl/agentinterrupt/{item['id']}/change/").content.decode()
    page = Client()
    page.force_login(people["owner"])
    assert "1 of 2 approvals" in page.get(f"/c/{run['conversation_id']}/").content.decode()
    assert _vote(client_of("bob"), item, YES).status_code == 202
    done = wait_run(owner, run["id"], "completed")
    assert [v["user"] for v in done["result"]["answer"]["votes"]] == ["alice", "bob"]


def test_one_rejection_after_an_approval_rejects(client_of):
    owner = client_of("owner")
    run = ask(owner, required_approvals=3)
    item = pending(run)
    assert _vote(client_of("alice"), item, YES).status_code == 202
    assert _vote(client_of("bob"), item, {"approved": False, "reason": "too risky"}
                 ).status_code == 202
    done = wait_run(owner, run["id"], "completed")
    assert done["result"]["answer"] == {"approved": False, "votes": [
        {"user": "alice", "approved": True, "reason": ""},
        {"user": "bob", "approved": False, "reason": "too risky"}]}
    # Settled: a third vote finds nothing pending.
    late = _vote(client_of("carol"), item, YES)
    assert late.status_code == 409


def test_reject_policy_quorum_needs_as_many_rejections(client_of):
    owner = client_of("owner")
    run = ask(owner, kind="review", required_approvals=2, reject_policy="quorum")
    item = pending(run)
    no = {"decision": "reject", "reason": "no"}
    assert _vote(client_of("alice"), item, no).status_code == 202
    assert owner.get(f"/api/runs/{run['id']}/").json()["status"] == "paused"
    # A quorum review takes approve or reject only.
    r = _vote(client_of("bob"), item, {"decision": "edit", "edited": {"plan": "B"}})
    assert r.status_code == 400
    assert _vote(client_of("bob"), item, no).status_code == 202
    done = wait_run(owner, run["id"], "completed")
    answer = done["result"]["answer"]
    assert answer["approved"] is False and answer["decision"] == "reject"
    assert [v["user"] for v in answer["votes"]] == ["alice", "bob"]


def test_quorum_from_the_agent_policy(client_of):
    owner = client_of("owner")
    run = ask(owner, agent="policy_quorum")
    item = pending(run)
    assert item["required_approvals"] == 2 and "policy" not in item["request"]
    assert _vote(client_of("alice"), item, YES).status_code == 202
    assert _vote(client_of("bob"), item, YES).status_code == 202
    done = wait_run(owner, run["id"], "completed")
    assert done["result"]["answer"]["approved"] is True
    assert [v["user"] for v in done["result"]["answer"]["votes"]] == ["alice", "bob"]

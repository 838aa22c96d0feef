"""Several pending interrupts at once (parallel branches): answered one by one by different
people, or together in one resume call; the graph resumes once, when none is left."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, AuditLog
from tests.agui_rules import validate_events
from tests.helpers import published_events, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def _by_team(run: dict) -> dict[str, dict]:
    return {i["request"]["details"]["team"]: i for i in run["pending_interrupts"]}


def test_two_reviewers_answer_separately(api, users):
    owner, reviewer = api("owner"), api("reviewer")
    run = wait_run(owner, start_run(owner, agent="approvals")["id"], "paused")
    pending = _by_team(run)
    assert set(pending) == {"legal", "security"}
    assert {i["reason"] for i in pending.values()} == {"legal_signoff", "security_signoff"}
    runs = validate_events(published_events(run["id"]))
    assert len(runs[0][-1]["outcome"]["interrupts"]) == 2

    r = owner.post(f"/api/interrupts/{pending['legal']['id']}/decision/",
                   json={"payload": {"approved": True}})
    assert r.status_code == 202
    # The 202 shows the run as the decision committed it: the other question still open.
    assert r.json()["status"] == "paused" and r.json()["owner"] == "owner"
    assert list(_by_team(r.json())) == ["security"]
    after_one = owner.get(f"/api/runs/{run['id']}/").json()
    # One answer of two: still paused, nothing resumed yet.
    assert after_one["status"] == "paused" and list(_by_team(after_one)) == ["security"]
    assert AgentRun.objects.get(pk=run["id"]).segments == 1

    r = reviewer.post(f"/api/interrupts/{pending['security']['id']}/decision/",
                      json={"payload": {"approved": True}})
    assert r.status_code == 202
    # The reviewer's 202: resumed (queued for a worker, or already running), none pending.
    assert r.json()["status"] in ("resuming", "running") and r.json()["owner"] == "owner"
    assert r.json()["pending_interrupts"] == [] and r.json()["segments"] in (1, 2)
    run = wait_run(owner, run["id"], "completed")
    assert [s["team"] for s in run["result"]["signoffs"]] == ["legal", "security"]
    db_run = AgentRun.objects.get(pk=run["id"])
    assert db_run.segments == 2
    actors = dict(AuditLog.objects.filter(run=db_run, action="decision")
                  .values_list("interrupt_ref", "actor_label"))
    assert actors == {pending["legal"]["interrupt_id"]: "owner",
                      pending["security"]["interrupt_id"]: "reviewer"}
    validate_events(published_events(run["id"]))


def test_answered_together_in_one_resume(api):
    client = api("owner")
    run = wait_run(client, start_run(client, agent="approvals")["id"], "paused")
    pending = _by_team(run)
    body = {"resume": [
        {"interrupt_id": pending["legal"]["interrupt_id"], "status": "resolved",
         "payload": {"approved": True}},
        {"interrupt_id": pending["security"]["interrupt_id"], "status": "resolved",
         "payload": {"approved": False, "reason": "pen test first"}},
    ]}
    # One invalid entry refuses the whole call, naming the entry; nothing is recorded.
    bad = {"resume": [body["resume"][0], {**body["resume"][1], "payload": {"approved": "?"}}]}
    r = client.post(f"/api/runs/{run['id']}/resume/", json=bad)
    assert r.status_code == 400
    assert pending["security"]["interrupt_id"] in r.json()["fields"]
    assert not AuditLog.objects.filter(run_id=run["id"], action="decision").exists()

    r = client.post(f"/api/runs/{run['id']}/resume/", json=body)
    assert r.status_code == 202, r.text
    run = wait_run(client, run["id"], "rejected")
    assert "security (pen test first)" in run["error"]
    assert AgentRun.objects.get(pk=run["id"]).segments == 2

"""Assignment and four-eyes, enforced by the decision service on every surface: REST
resume, REST decision, AG-UI resume, the chat page's form POST and the admin."""

from __future__ import annotations

import httpx
import pytest
from django.test import Client

from hitl.models import AgentInterrupt
from runs.models import AuditLog
from tests.agui_client import resume as agui_resume
from tests.helpers import pending, wait_run
from tests.policies.conftest import ask

APPROVE = {"approved": True}


def _login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def refused_everywhere(client: httpx.Client, user, run: dict, code: str) -> None:
    """``user`` (whose API client is ``client``) is refused with 403 ``code`` on each surface,
    and nothing is recorded."""
    item = pending(run)
    iid = item["interrupt_id"]
    r = client.post(f"/api/runs/{run['id']}/resume/", json={"interrupt_id": iid,
                                                           "payload": APPROVE})
    assert (r.status_code, r.json()["code"]) == (403, code), r.text
    r = client.post(f"/api/interrupts/{item['id']}/decision/", json={"payload": APPROVE})
    assert (r.status_code, r.json()["code"]) == (403, code), r.text
    r = client.post(f"/agui/{run['agent']}/", json=agui_resume(run["thread_id"], iid, APPROVE),
                    headers={"Accept": "text/event-stream"})
    assert (r.status_code, r.json()["code"]) == (403, code), r.text
    page = _login(user).post(f"/c/{run['conversation_id']}/answer/{iid}/",
                             {"decision": "approve"})
    assert page.status_code == 403
    admin = _login(user).post(f"/admin/hitl/agentinterrupt/{item['id']}/change/",
                              {"decision": "approve"})
    assert admin.status_code == 200  # the decide page again, with the refusal
    row = AgentInterrupt.objects.get(pk=item["id"])
    assert row.status == "pending" and row.decision is None
    assert not AuditLog.objects.filter(run_id=run["id"], action="decision").exists()


def test_only_assignees_decide_on_every_surface(client_of, people):
    owner = client_of("owner")
    run = ask(owner, assignees=["alice"])
    item = pending(run)
    assert item["assignees"] == ["alice"] and item["assigned_groups"] == []
    refused_everywhere(client_of("bob"), people["bob"], run, "not_assigned")
    # The owner too: with assignees set, only they decide.
    r = owner.post(f"/api/runs/{run['id']}/resume/",
                   json={"interrupt_id": item["interrupt_id"], "payload": APPROVE})
    assert (r.status_code, r.json()["code"]) == (403, "not_assigned")
    # The admin shows the refusal on the decide page, not a 500.
    admin = _login(people["bob"]).post(f"/admin/hitl/agentinterrupt/{item['id']}/change/",
                                       {"decision": "approve"}, follow=True)
    assert "assigned to someone else" in admin.content.decode()
    alice = client_of("alice")
    mine = alice.get("/api/interrupts/", params={"assigned_to": "me", "status": "pending"})
    assert [i["id"] for i in mine.json()["results"]] == [item["id"]]
    assert client_of("bob").get("/api/interrupts/",
                                params={"assigned_to": "me"}).json()["results"] == []
    r = alice.post(f"/api/interrupts/{item['id']}/decision/", json={"payload": APPROVE})
    assert r.status_code == 202, r.text
    done = wait_run(owner, run["id"], "completed")
    assert done["result"] == {"answer": APPROVE}


def test_group_assignment_and_override(client_of, people):
    owner = client_of("owner")
    run = ask(owner, groups=["legal"])
    item = pending(run)
    assert item["assigned_groups"] == ["legal"]
    mine = client_of("carol").get("/api/interrupts/", params={"assigned_to": "me"}).json()
    assert [i["id"] for i in mine["results"]] == [item["id"]]
    r = client_of("alice").post(f"/api/interrupts/{item['id']}/decision/",
                                json={"payload": APPROVE})
    assert (r.status_code, r.json()["code"]) == (403, "not_assigned")
    r = client_of("carol").post(f"/api/interrupts/{item['id']}/decision/",
                                json={"payload": APPROVE})
    assert r.status_code == 202, r.text
    wait_run(owner, run["id"], "completed")
    # hitl.override_assignment decides what is assigned to others.
    run2 = ask(owner, assignees=["alice"])
    r = client_of("boss").post(f"/api/runs/{run2['id']}/resume/", json={
        "interrupt_id": pending(run2)["interrupt_id"], "payload": APPROVE})
    assert r.status_code == 202, r.text
    assert wait_run(owner, run2["id"], "completed")["result"] == {"answer": APPROVE}


def test_unknown_assignee_fails_the_run_loudly(client_of):
    owner = client_of("owner")
    from tests.helpers import start_run

    run = start_run(owner, "policy_ask", input={"policy": {"assignees": ["nobody"]}})
    failed = wait_run(owner, run["id"], "failed")
    assert "nobody" in failed["error"]


def test_four_eyes_from_the_agent_policy(client_of, people):
    owner = client_of("owner")
    run = ask(owner, agent="policy_foureyes")
    item = pending(run)
    assert item["requester_may_decide"] is False
    # Staff, so the admin's decide page is open to the owner too (their own runs).
    people["owner"].is_staff = True
    people["owner"].save(update_fields=["is_staff"])
    refused_everywhere(owner, people["owner"], run, "requester_may_not_decide")
    page = _login(people["owner"]).get(f"/c/{run['conversation_id']}/").content.decode()
    assert "Waiting for a reviewer" in page
    assert f'<form method="post" action="/c/{run["conversation_id"]}/answer/' not in page
    r = client_of("reviewer").post(f"/api/interrupts/{item['id']}/decision/",
                                   json={"payload": APPROVE})
    assert r.status_code == 202, r.text
    wait_run(owner, run["id"], "completed")


def test_four_eyes_on_the_request(client_of, people):
    owner = client_of("owner")
    run = ask(owner, requester_may_decide=False)
    r = owner.post(f"/api/runs/{run['id']}/resume/",
                   json={"interrupt_id": pending(run)["interrupt_id"], "payload": APPROVE})
    assert (r.status_code, r.json()["code"]) == (403, "requester_may_not_decide")
    r = client_of("bob").post(f"/api/runs/{run['id']}/resume/",
                              json={"interrupt_id": pending(run)["interrupt_id"],
                                    "payload": APPROVE})
    assert r.status_code == 202


@pytest.mark.parametrize("filter_value, who, expected", [
    ("me", "alice", True), ("me", "bob", False), ("groups", "carol", True),
    ("none", "bob", False)])
def test_admin_assignment_filters(client_of, people, filter_value, who, expected):
    owner = client_of("owner")
    run = ask(owner, assignees=["alice"], groups=["legal"])
    item = pending(run)
    page = _login(people[who]).get("/admin/hitl/agentinterrupt/",
                                   {"assigned": filter_value}).content.decode()
    assert (f"/admin/hitl/agentinterrupt/{item['id']}/change/" in page) is expected
    assert "alice, group legal" in _login(people["bob"]).get(
        "/admin/hitl/agentinterrupt/").content.decode()


def test_admin_claim_release_assign(client_of, people):
    owner = client_of("owner")
    run = ask(owner)
    item = pending(run)
    row = AgentInterrupt.objects.get(pk=item["id"])
    admin = _login(people["alice"])
    url = "/admin/hitl/agentinterrupt/"
    admin.post(url, {"action": "claim_selected", "_selected_action": [item["id"]]})
    assert [u.username for u in row.assignees.all()] == ["alice"]
    # Claimed by alice: bob cannot claim it, nor decide it.
    _login(people["bob"]).post(url, {"action": "claim_selected", "_selected_action": [item["id"]]})
    assert [u.username for u in row.assignees.all()] == ["alice"]
    r = client_of("bob").post(f"/api/interrupts/{item['id']}/decision/",
                              json={"payload": APPROVE})
    assert r.status_code == 403
    admin.post(url, {"action": "release_selected", "_selected_action": [item["id"]]})
    assert list(row.assignees.all()) == []
    page = admin.post(url, {"action": "assign_selected", "_selected_action": [item["id"]],
                            "post": "yes", "users": "nobody"}).content.decode()
    assert "no such user: nobody" in page and not row.assignees.exists()
    admin.post(url, {"action": "assign_selected", "_selected_action": [item["id"]],
                     "post": "yes", "users": "bob", "groups": "legal"})
    assert [u.username for u in row.assignees.all()] == ["bob"]
    assert [g.name for g in row.assigned_groups.all()] == ["legal"]
    assert AuditLog.objects.filter(run_id=run["id"], interrupt_ref=item["interrupt_id"],
                                   payload__has_key="assignees").count() == 3
    r = client_of("bob").post(f"/api/interrupts/{item['id']}/decision/",
                              json={"payload": APPROVE})
    assert r.status_code == 202
    wait_run(owner, run["id"], "completed")

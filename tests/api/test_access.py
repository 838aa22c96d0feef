"""Who may see and answer what: owners, reviewers with the decide permission, others."""

from __future__ import annotations

import httpx
import pytest

from runs.models import AgentRun, AuditLog
from tests.helpers import answer_and_wait, pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_another_users_run_is_404_everywhere(api):
    owner, outsider = api("owner"), api("outsider")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    item = pending(run)
    before = AuditLog.objects.filter(run_id=run["id"]).count()

    assert outsider.get(f"/api/runs/{run['id']}/").status_code == 404
    r = outsider.post(f"/api/runs/{run['id']}/resume/",
                      json={"interrupt_id": item["interrupt_id"], "payload": {"value": "x"}})
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    assert outsider.post(f"/api/runs/{run['id']}/cancel/").status_code == 404
    assert outsider.get(f"/api/interrupts/{item['id']}/").status_code == 404
    assert outsider.post(f"/api/interrupts/{item['id']}/decision/",
                         json={"payload": {"value": "x"}}).status_code == 404
    # No leak in lists either.
    assert outsider.get("/api/runs/").json()["count"] == 0
    assert outsider.get("/api/interrupts/").json()["count"] == 0
    # A thread of another user cannot be continued.
    r = outsider.post("/api/runs/", json={"agent": "dev", "thread_id": run["thread_id"]})
    assert r.status_code == 404
    assert AgentRun.objects.get(pk=run["id"]).status == "paused"
    assert AuditLog.objects.filter(run_id=run["id"]).count() == before


def test_anonymous_requests_are_401(api, live):
    anon = httpx.Client(base_url=live["base_url"])
    bad = httpx.Client(base_url=live["base_url"], headers={"Authorization": "Token nope"})
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    for client in (anon, bad):
        for method, url in [("get", "/api/runs/"), ("post", "/api/runs/"),
                            ("get", f"/api/runs/{run['id']}/"),
                            ("post", f"/api/runs/{run['id']}/resume/"),
                            ("get", "/api/interrupts/"), ("get", "/api/agents/")]:
            r = getattr(client, method)(url)
            assert r.status_code == 401, (method, url, r.status_code)
            assert r.json()["code"] in ("not_authenticated", "authentication_failed")
    anon.close()
    bad.close()


def test_reviewer_with_permission_decides_for_others(api, users):
    owner, reviewer = api("owner"), api("reviewer")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    item = pending(run)
    # The queue shows the reviewer other users' pending interrupts...
    queue = reviewer.get("/api/interrupts/", params={"status": "pending"}).json()["results"]
    assert [q["id"] for q in queue] == [item["id"]]
    # ...and the reviewer's decision is recorded as theirs.
    r = reviewer.post(f"/api/interrupts/{item['id']}/decision/", json={"payload": {"value": "R"}})
    assert r.status_code == 202, r.text
    run = wait_run(owner, run["id"], "paused")
    decision = AuditLog.objects.get(run_id=run["id"], action="decision")
    assert decision.actor_id == users["reviewer"].id and decision.payload == {"value": "R"}
    assert owner.get(f"/api/interrupts/{item['id']}/").json()["decided_by"] == "reviewer"


def test_session_auth_works_for_browsers(live, users):
    with httpx.Client(base_url=live["base_url"]) as browser:
        login = browser.get("/accounts/login/")
        csrf = browser.cookies["csrftoken"]
        r = browser.post("/accounts/login/", data={"username": "owner", "password": "pw-owner",
                                                "csrfmiddlewaretoken": csrf,
                                                "next": "/api/runs/"})
        assert login.status_code == 200 and r.status_code == 302, r.text
        assert browser.get("/api/runs/").status_code == 200
        # Unsafe methods need the CSRF token with session auth.
        assert browser.post("/api/runs/", json={"agent": "dev"}).status_code == 403
        r = browser.post("/api/runs/", json={"agent": "dev"},
                         headers={"X-CSRFToken": browser.cookies["csrftoken"]})
        assert r.status_code == 201, r.text
        wait_run(browser, r.json()["id"], "paused")


def test_owner_finishes_after_reviewer_decided(api):
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    run = answer_and_wait(owner, run, {"value": "A"})
    assert pending(run)["kind"] == "select"

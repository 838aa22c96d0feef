"""AG-UI bad input: 422 naming the field, 404 for an unknown agent, 401 for anonymous,
a clear error (and nothing changed) for a resume naming an unknown or decided interrupt."""

from __future__ import annotations

import pytest

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from tests.agui_client import interrupts, post_events, resume, run_input, run_segment

pytestmark = pytest.mark.django_db(transaction=True)


def test_malformed_input_is_422_naming_the_field(api):
    client = api("owner")
    body = run_input()
    del body["threadId"]
    r = client.post("/agui/dev/", json=body)
    assert r.status_code == 422, r.text
    assert "threadId" in r.json()["fields"] and "threadId" in r.json()["detail"]

    r = client.post("/agui/dev/", json=run_input(resume=[{"interruptId": "x",
                                                          "status": "maybe"}]))
    assert r.status_code == 422, r.text
    assert any(k.startswith("resume.0.status") for k in r.json()["fields"]), r.json()

    r = client.post("/agui/dev/", content=b"{not json", headers={"Content-Type":
                                                                 "application/json"})
    assert r.status_code == 422 and "body" in r.json()["fields"]
    r = client.post("/agui/dev/connect/", json={"runId": "r"})
    assert r.status_code == 422 and "threadId" in r.json()["fields"]
    assert not AgentRun.objects.exists()


def test_bad_agent_input_names_the_field(api):
    client = api("owner")
    r = client.post("/agui/dev/", json=run_input(forwardedProps={"input": {"colour": "red"}}))
    assert r.status_code == 400, r.text
    assert "colour" in r.json()["fields"]["input"]
    assert not AgentRun.objects.exists()


def test_unknown_agent_is_404(api):
    client = api("owner")
    for path in ("/agui/nope/", "/agui/nope/connect/"):
        r = client.post(path, json=run_input())
        assert r.status_code == 404 and r.json()["code"] == "unknown_agent", r.text


def test_anonymous_is_401_and_bad_token_is_401(api):
    for path in ("/agui/dev/", "/agui/dev/connect/"):
        r = api(None).post(path, json=run_input())
        assert r.status_code == 401, r.text
        assert r.headers["WWW-Authenticate"] == "Token"
        r = api(None).post(path, json=run_input(), headers={"Authorization": "Token nope"})
        assert r.status_code == 401, r.text
    assert not AgentRun.objects.exists()


def test_resume_naming_unknown_or_decided_interrupt_changes_nothing(api):
    client = api("owner")
    body = run_input()
    thread = body["threadId"]
    (first,) = interrupts(run_segment(client, "dev", body))
    r = client.post("/agui/dev/", json=resume(thread, "no-such-interrupt", {"value": "x"}))
    assert r.status_code == 404 and r.json()["code"] == "unknown_interrupt", r.text

    run = run_segment(client, "dev", resume(thread, first["id"], {"value": "Apollo"}))
    (second,) = interrupts(run)
    audit_before = AuditLog.objects.count()
    r = client.post("/agui/dev/", json=resume(thread, first["id"], {"value": "Other"}))
    assert r.status_code == 409 and r.json()["code"] == "already_decided", r.text
    assert first["id"] in r.json()["detail"]
    # An invalid payload for the open interrupt: 400 naming the field, nothing decided.
    r = client.post("/agui/dev/", json=resume(thread, second["id"], {"value": "purple"}))
    assert r.status_code == 400 and r.json()["code"] == "invalid_payload", r.text
    assert AuditLog.objects.count() == audit_before
    db_run = AgentRun.objects.get(thread_id=thread)
    assert db_run.status == "paused"
    assert db_run.interrupts.get(interrupt_id=second["id"]).status == AgentInterrupt.Status.PENDING
    assert db_run.interrupts.get(interrupt_id=first["id"]).decision == {"value": "Apollo"}


def test_other_user_cannot_run_or_resume_on_a_thread(api):
    owner, outsider = api("owner"), api("outsider")
    body = run_input()
    (pending,) = interrupts(run_segment(owner, "dev", body))
    r = outsider.post("/agui/dev/", json=run_input(body["threadId"]))
    assert r.status_code == 404, r.text
    r = outsider.post("/agui/dev/", json=resume(body["threadId"], pending["id"], {"value": "x"}))
    assert r.status_code == 404, r.text
    r = outsider.post("/agui/dev/connect/", json={"threadId": body["threadId"]})
    assert r.status_code == 404, r.text
    assert AgentInterrupt.objects.get(interrupt_id=pending["id"]).status == "pending"


def test_session_auth_needs_csrf(live, users):
    import re

    import httpx

    with httpx.Client(base_url=live["base_url"], timeout=30) as browser:
        page = browser.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        r = browser.post("/accounts/login/", data={"username": "owner", "password": "pw-owner",
                                                   "csrfmiddlewaretoken": token})
        assert r.status_code in (200, 302) and "sessionid" in browser.cookies, r.text[:500]
        r = browser.post("/agui/dev/", json=run_input())
        assert r.status_code == 403 and "CSRF" in r.json()["detail"], r.text
        events = post_events(browser, "/agui/dev/", run_input(),
                             headers={"X-CSRFToken": browser.cookies["csrftoken"]})
        assert events[-1]["outcome"]["type"] == "interrupt"

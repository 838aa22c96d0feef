"""/agui/ is served by Django's stock ASGI handler with the middleware stack: ALLOWED_HOSTS,
security headers, JSON errors; hostile bodies are refused; thread names are per user and
nobody learns about another user's thread or interrupts."""

from __future__ import annotations

import json

import pytest

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog, Conversation
from tests.agui_client import interrupts, resume, run_input, run_segment

pytestmark = pytest.mark.django_db(transaction=True)

SECURITY_HEADERS = {"x-content-type-options": "nosniff", "x-frame-options": "DENY",
                    "referrer-policy": "same-origin"}


def _state() -> tuple:
    return (AgentRun.objects.count(), Conversation.objects.count(), AuditLog.objects.count(),
            sorted(AgentInterrupt.objects.values_list("id", "status")))


def _json_error(r, status: int, code: str | None = None) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert isinstance(body["code"], str) and isinstance(body["detail"], str)
    if code:
        assert body["code"] == code, body
    return body


def test_a_foreign_host_is_a_json_400_with_nothing_done(api):
    client = api("owner")
    before = _state()
    for path in ("/agui/dev/", "/agui/dev/connect/"):
        r = client.post(path, json=run_input(), headers={"Host": "evil.example"})
        _json_error(r, 400, "disallowed_host")
        # Refused by CommonMiddleware, above XFrameOptionsMiddleware in the stock chain:
        # only the outermost SecurityMiddleware's headers are on it (as on /api/).
        assert r.headers["x-content-type-options"] == "nosniff", r.headers
        assert r.headers["referrer-policy"] == "same-origin", r.headers
    # The rest of the site refuses it the same way.
    _json_error(client.get("/api/runs/", headers={"Host": "evil.example"}), 400,
                "disallowed_host")
    assert _state() == before


def test_answers_carry_the_security_headers(api):
    client = api("owner")
    for r in (client.post("/agui/nope/", json=run_input()),  # a JSON error
              client.get("/agui/dev/")):  # wrong method
        for name, value in SECURITY_HEADERS.items():
            assert r.headers[name] == value, (name, r.status_code, r.headers)
    with client.stream("POST", "/agui/dev/", json=run_input()) as stream:  # an SSE stream
        assert stream.status_code == 200
        for name, value in SECURITY_HEADERS.items():
            assert stream.headers[name] == value, (name, stream.headers)
        for _ in stream.iter_lines():
            pass


@pytest.mark.parametrize("raw,code", [
    ('{"threadId": "t", "runId": "r", "state": ' + "[" * 5000 + "]" * 5000 + "}", "too_deep"),
    ('{"threadId": "t", "runId": "r", "state": ' + "[" * 70 + "]" * 70 + "}", "too_deep"),
    ('{"threadId": "t\\u0000", "runId": "r"}', "invalid_string"),
    ('{"threadId": "\\ud83d", "runId": "r"}', "invalid_string"),
])
def test_hostile_bodies_are_400(api, raw, code):
    client = api("owner")
    before = _state()
    for path in ("/agui/dev/", "/agui/dev/connect/"):
        r = client.post(path, content=raw.encode(), headers={"Content-Type": "application/json"})
        _json_error(r, 400, code)
    assert _state() == before


def test_a_huge_body_is_a_json_413(api):
    client = api("owner")
    before = _state()
    raw = b'{"threadId": "t", "runId": "r", "state": {"x": "' + b"x" * (10 * 1024 * 1024) + b'"}}'
    _json_error(client.post("/agui/dev/", content=raw,
                            headers={"Content-Type": "application/json"}), 413, "too_large")
    assert _state() == before


def test_thread_names_are_per_user(api):
    owner, outsider = api("owner"), api("outsider")
    run = run_segment(owner, "dev", run_input("my-chat"))
    (item,) = interrupts(run)
    # The outsider's "my-chat" is another conversation; the owner's is not disclosed.
    before = _state()
    r = outsider.post("/agui/dev/connect/", json={"threadId": "my-chat"})
    _json_error(r, 404, "unknown_thread")
    # Resuming the owner's interrupt under the same name: the same 404 as a made-up id, and
    # the interrupt is untouched.
    r = outsider.post("/agui/dev/", json=resume("my-chat", item["id"], {"value": "x"}))
    made_up = outsider.post("/agui/dev/", json=resume("my-chat", "no-such-id", {"value": "x"}))
    assert (r.status_code, r.json()["code"]) == (made_up.status_code, made_up.json()["code"])
    assert r.status_code == 404
    assert _state() == before
    # The outsider's own "my-chat" is a separate conversation.
    theirs = run_segment(outsider, "dev", run_input("my-chat"))
    assert interrupts(theirs)
    assert Conversation.objects.count() == 2
    assert set(Conversation.objects.values_list("owner__username", flat=True)) == {
        "owner", "outsider"}


def test_an_oversized_answer_is_refused(api):
    client = api("owner")
    run = run_segment(client, "dev", run_input())
    (item,) = interrupts(run)
    thread_id = run[0]["threadId"]
    before = _state()
    big = {"value": "x" * (256 * 1024 + 1)}
    body = _json_error(client.post("/agui/dev/", json=resume(thread_id, item["id"], big)), 400,
                       "answer_too_large")
    assert "ANSWER_MAX_BYTES" in json.dumps(body)
    run_id = str(AgentRun.objects.get().id)
    rest = client.post(f"/api/runs/{run_id}/resume/",
                       json={"interrupt_id": item["id"], "payload": big})
    _json_error(rest, 400, "answer_too_large")
    decision = client.post(f"/api/interrupts/{AgentInterrupt.objects.get().id}/decision/",
                           json={"payload": big})
    _json_error(decision, 400, "answer_too_large")
    assert _state() == before


@pytest.mark.parametrize("body,field", [
    ({"agent": "dev", "message": 5}, "message"),
    ({"agent": "dev", "message": True}, "message"),
    ({"agent": "dev", "message": {"text": "hi"}}, "message"),
    ({"agent": 5}, "agent"),
])
def test_start_refuses_non_string_text(api, body, field):
    client = api("owner")
    before = _state()
    r = _json_error(client.post("/api/runs/", json=body), 400)
    assert field in r["fields"], r
    assert _state() == before

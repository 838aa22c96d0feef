"""Hostile bodies and query strings at the API edge: a 4xx in the JSON error shape, and
nothing written (no run, conversation, message, interrupt decision or idempotency key)."""

from __future__ import annotations

import json

import pytest

from agentsite.models import IdempotencyKey
from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog, Conversation, Message
from tests.helpers import pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

JSON = {"Content-Type": "application/json"}


def _state() -> tuple:
    return (AgentRun.objects.count(), Conversation.objects.count(), Message.objects.count(),
            AuditLog.objects.count(), IdempotencyKey.objects.count(),
            sorted(AgentInterrupt.objects.values_list("id", "status")))


def _deep(depth: int) -> str:
    return '{"agent": "dev", "input": {"topic": ' + "[" * depth + "]" * depth + "}}"


def _assert_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.text
    body = response.json()
    assert isinstance(body["code"], str) and isinstance(body["detail"], str)
    if code:
        assert body["code"] == code, body
    return body


BAD_START_BODIES = [
    # (raw body, status, code, field named in `fields`)
    (_deep(70), 400, "too_deep", "input.topic"),
    (_deep(1_000), 400, "too_deep", None),
    (_deep(100_000), 400, "too_deep", None),
    ('{"agent": "dev", "input": {"topic": "a\\u0000b"}}', 400, "invalid_string", "input.topic"),
    ('{"agent": "dev", "message": "hi\\u0000"}', 400, "invalid_string", "message"),
    ('{"agent": "dev", "input": {"to\\u0000pic": "x"}}', 400, "invalid_string", "input"),
    ('{"agent": "dev", "input": {"topic": "\\ud800"}}', 400, "invalid_string", "input.topic"),
    ('{"agent": "dev", "input": {"topic": "x\\udfffy"}}', 400, "invalid_string", "input.topic"),
    ('{"agent": "dev", "input": {"topic": NaN}}', 400, "parse_error", None),
    ('{"agent": "dev", "input": {"topic": Infinity}}', 400, "parse_error", None),
    ('{"agent": "dev", "n": ' + "9" * 5000 + "}", 400, "parse_error", None),
]


@pytest.mark.parametrize("raw,status,code,field", BAD_START_BODIES)
@pytest.mark.parametrize("with_key", [False, True])
def test_start_refuses_hostile_json(api, raw, status, code, field, with_key):
    client = api("owner")
    before = _state()
    headers = {**JSON, **({"Idempotency-Key": f"k-{hash(raw)}"} if with_key else {})}
    body = _assert_error(client.post("/api/runs/", content=raw.encode(), headers=headers),
                         status, code)
    if field:
        assert any(name.startswith(field) for name in body["fields"]), body
    assert _state() == before


def test_resume_and_decision_refuse_hostile_json(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    item = pending(run)
    before = _state()
    head = json.dumps({"interrupt_id": item["interrupt_id"]})[:-1]
    deep = head + ', "payload": {"value": ' + "[" * 5000 + "]" * 5000 + "}}"
    nul = json.dumps({"interrupt_id": item["interrupt_id"], "payload": {"value": "a\x00"}})
    lone = head + ', "payload": {"value": "\\udc00"}}'
    for raw in (deep, nul, lone):
        for key in ({}, {"Idempotency-Key": f"resume-{len(raw)}"}):
            _assert_error(client.post(f"/api/runs/{run['id']}/resume/", content=raw.encode(),
                                      headers={**JSON, **key}), 400)
    decision = f"/api/interrupts/{item['id']}/decision/"
    _assert_error(client.post(decision, content=b'{"payload": {"value": "\\u0000"}}',
                              headers=JSON), 400, "invalid_string")
    assert _state() == before
    # The interrupt is still open and takes a good answer.
    ok = client.post(f"/api/runs/{run['id']}/resume/",
                     json={"interrupt_id": item["interrupt_id"], "payload": {"value": "Fine"}})
    assert ok.status_code == 202, ok.text
    wait_run(client, run["id"], {"paused", "completed"})


def test_a_huge_body_is_a_json_413(api):
    client = api("owner")
    before = _state()
    raw = b'{"agent": "dev", "message": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    body = _assert_error(client.post("/api/runs/", content=raw, headers=JSON), 413, "too_large")
    assert "bytes" in body["detail"]
    assert _state() == before


@pytest.mark.parametrize("value", ["-1", "0", "abc", "1.5", "201", "99999999999999999999",
                                   "", " 3", "٣"])
def test_bad_page_size_is_a_400(api, value):
    r = api("owner").get("/api/runs/", params={"page_size": value})
    body = _assert_error(r, 400, "invalid")
    assert "page_size" in body["fields"]


def test_good_page_size_is_honoured(api):
    client = api("owner")
    for _ in range(3):
        start_run(client)
    page = client.get("/api/runs/", params={"page_size": "2"}).json()
    assert len(page["results"]) == 2 and page["count"] == 3
    for run in page["results"]:
        wait_run(client, run["id"], "paused")

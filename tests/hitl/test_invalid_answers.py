"""For every kind, malformed or out-of-range answers get a 400 naming the problem,
and nothing changes: the run stays paused, the interrupt pending, no audit row."""

from __future__ import annotations

import pytest

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from tests.helpers import answer, answer_and_wait, pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

# kind → (bad payloads with a word the error must name, a good payload)
CASES = {
    "input": ([({}, "value"), ({"value": ""}, "empty"), ({"value": 5}, "string"),
               ({"value": "x", "extra": 1}, "extra"), ([], "object"), ("text", "object")],
              {"value": "1.0"}),
    "select": ([({"value": "alpha"}, "not one of the offered"), ({"values": ["beta"]}, "value"),
                ({"value": None}, "string")],
               {"value": "beta"}),
    "multiSelect": ([({"values": ["bsd"]}, "not among the offered"), ({"values": []}, "at least 1"),
                     ({"values": ["linux", "macos", "windows"]}, "at most 2"),
                     ({"values": ["linux", "linux"]}, "duplicates"),
                     ({"values": "linux"}, "list")],
                    {"values": ["linux", "windows"]}),
    "modal": ([({"action": "abort"}, "not one of the offered actions"), ({}, "action")],
              {"action": "continue"}),
    "unlock": ([({"key": "signing-key"}, "extra"), (None, "object")], {}),
    "review": ([({"decision": "respond", "feedback": "hm"}, "not allowed"),
                ({"decision": "edit"}, "edited"),
                ({"decision": "edit", "edited": {"title": "R"}}, "steps"),
                ({"decision": "edit", "edited": {"title": "R", "steps": []}}, "steps"),
                ({"decision": "approve", "edited": {"title": "R"}}, "only allowed"),
                ({"decision": "maybe"}, "decision")],
               {"decision": "edit", "edited": {"title": "Release 2", "steps": ["build", "ship"]}}),
    "approval": ([({"approved": "perhaps"}, "bool"), ({}, "approved"),
                  ({"approved": True, "reason": 3}, "string")],
                 {"approved": True}),
}


def _snapshot(run_id: str) -> tuple:
    run = AgentRun.objects.get(pk=run_id)
    return (run.status, run.segments,
            list(AgentInterrupt.objects.filter(run=run).values_list("status", "decision")),
            AuditLog.objects.filter(run=run).count())


def test_every_kind_rejects_bad_answers_and_changes_nothing(api):
    client = api("owner")
    run = wait_run(client, start_run(client, agent="showcase")["id"], "paused")
    seen = []
    while run["status"] == "paused":
        kind = pending(run)["kind"]
        seen.append(kind)
        bad, good = CASES[kind]
        before = _snapshot(run["id"])
        for payload, word in bad:
            response = answer(client, run, payload)
            assert response.status_code == 400, (kind, payload, response.text)
            body = response.json()
            assert body["code"] in ("invalid_payload", "invalid"), body
            assert word.lower() in str(body).lower(), (kind, payload, body)
            assert _snapshot(run["id"]) == before, (kind, payload)
        run = answer_and_wait(client, run, good)
    assert seen == ["input", "select", "multiSelect", "modal", "unlock", "review", "approval"]
    assert run["status"] == "completed"
    assert run["result"]["plan"] == {"title": "Release 2", "steps": ["build", "ship"]}


def test_malformed_resume_bodies_are_400(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    url = f"/api/runs/{run['id']}/resume/"
    before = _snapshot(run["id"])
    for body, word in [({}, "either"), ({"payload": {"value": "x"}}, "either"),
                       ({"resume": []}, "empty"),
                       ({"resume": [{"interrupt_id": pending(run)["interrupt_id"],
                                     "status": "maybe"}]}, "status"),
                       ({"interrupt_id": "x" * 65, "payload": {}}, "interrupt_id")]:
        response = client.post(url, json=body)
        assert response.status_code == 400, (body, response.text)
        assert word in response.text
    response = client.post(url, content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and "JSON" in response.json()["detail"]
    response = client.post(url, json={"interrupt_id": "nope", "payload": {"value": "x"}})
    assert response.status_code == 404 and response.json()["code"] == "unknown_interrupt"
    assert _snapshot(run["id"]) == before

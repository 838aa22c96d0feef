"""Issue 28 over REST: a run's retry state, its failure in plain words and technically,
its token usage, and POST /api/runs/<id>/retry/ (owner or reviewer, audited, once)."""

from __future__ import annotations

import threading

import httpx
import pytest

from runs.models import AgentRun, AuditLog
from tests.helpers import wait_run
from tests.retry_rows import DETAIL, PLAIN_ERROR, RATE_LIMITED, failed_run, retrying_run

pytestmark = pytest.mark.django_db(transaction=True)


def retry_rows(run_id) -> list[AuditLog]:
    return list(AuditLog.objects.filter(run_id=run_id, action="run.status",
                                        from_status="failed", to_status="retrying"))


def test_run_detail_and_list_show_retry_state_and_usage(api, users, settings):
    run = retrying_run(users["owner"], usage=[(100, 20), (50, 30)])
    body = api("owner").get(f"/api/runs/{run.id}/").json()
    assert body["status"] == "retrying"
    assert (body["retries"], body["retry_budget"]) == (2, settings.MODEL_RUN_RETRIES)
    assert body["retry_reason"] == RATE_LIMITED and body["retry_at"]
    assert body["error_detail"] == DETAIL
    assert (body["model_name"], body["input_tokens"], body["output_tokens"],
            body["total_tokens"]) == ("gpt-4o-mini", 150, 50, 200)
    assert [(u["segment"], u["input_tokens"], u["output_tokens"], u["total_tokens"], u["calls"])
            for u in body["usage"]] == [(1, 100, 20, 120, 1), (2, 50, 30, 80, 1)]
    listed = api("owner").get("/api/runs/", params={"status": "retrying"}).json()["results"]
    assert [r["id"] for r in listed] == [str(run.id)]
    assert listed[0]["total_tokens"] == 200 and len(listed[0]["usage"]) == 2
    # A reviewer reads it as the owner does; anyone else: 404; nobody: 401.
    assert api("reviewer").get(f"/api/runs/{run.id}/").json()["retry_reason"] == RATE_LIMITED
    assert api("outsider").get(f"/api/runs/{run.id}/").status_code == 404
    assert api(None).get(f"/api/runs/{run.id}/").status_code == 401


def test_failed_run_has_plain_error_and_technical_detail(api, users):
    run = failed_run(users["owner"])
    body = api("owner").get(f"/api/runs/{run.id}/").json()
    assert (body["status"], body["error"], body["error_detail"]) == ("failed", PLAIN_ERROR,
                                                                      DETAIL)
    assert body["usage"] == [] and body["total_tokens"] == 0


@pytest.mark.parametrize("who", ["owner", "reviewer"])
def test_retry_continues_a_failed_run_audited(api, users, who):
    run = failed_run(users["owner"])
    response = api(who).post(f"/api/runs/{run.id}/retry/")
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "retrying" and response.json()["id"] == str(run.id)
    [audit] = retry_rows(run.id)
    assert (audit.actor, audit.surface) == (users[who], "api")
    # The worker takes it up at once: dev (no checkpoint here) starts over and asks.
    body = wait_run(api("owner"), str(run.id), "paused")
    assert body["pending_interrupts"]
    assert AgentRun.objects.get(pk=run.id).status == "paused"


def test_retry_refused_to_outsiders_and_anonymous(api, users, live):
    run = failed_run(users["owner"])
    response = api("outsider").post(f"/api/runs/{run.id}/retry/")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert api(None).post(f"/api/runs/{run.id}/retry/").status_code == 401
    bad = httpx.Client(base_url=live["base_url"], headers={"Authorization": "Token nope"})
    assert bad.post(f"/api/runs/{run.id}/retry/").status_code == 401
    bad.close()
    # Session auth without a CSRF token: 403.
    session = httpx.Client(base_url=live["base_url"])
    session.get("/accounts/login/")
    session.post("/accounts/login/", data={"username": "owner", "password": "pw-owner",
                                           "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                 headers={"Referer": live["base_url"] + "/accounts/login/"})
    assert session.post(f"/api/runs/{run.id}/retry/").status_code == 403
    session.close()
    assert api("owner").post("/api/runs/not-a-uuid/retry/").status_code == 404
    assert AgentRun.objects.get(pk=run.id).status == "failed"
    assert not retry_rows(run.id)


def test_retry_conflicts(api, users):
    owner = api("owner")
    done = failed_run(users["owner"], agent="dev")
    AgentRun.objects.filter(pk=done.pk).update(status="completed")
    response = owner.post(f"/api/runs/{done.id}/retry/")
    assert (response.status_code, response.json()["code"]) == (409, "run_not_failed")
    waiting = retrying_run(users["owner"])
    response = owner.post(f"/api/runs/{waiting.id}/retry/")
    assert (response.status_code, response.json()["code"]) == (409, "run_not_failed")
    # A later run on the thread: the failed one's checkpoint is no longer the thread's.
    old = failed_run(users["owner"])
    failed_run(users["owner"], conversation=old.conversation)
    response = owner.post(f"/api/runs/{old.id}/retry/")
    assert (response.status_code, response.json()["code"]) == (409, "thread_moved_on")
    assert AgentRun.objects.get(pk=old.id).status == "failed" and not retry_rows(old.id)


def test_concurrent_retries_continue_the_run_once(api, users):
    run = failed_run(users["owner"])
    clients = [api("owner"), api("reviewer")]
    barrier = threading.Barrier(len(clients))
    answers: list[httpx.Response] = []

    def post(client: httpx.Client) -> None:
        barrier.wait()
        answers.append(client.post(f"/api/runs/{run.id}/retry/"))

    threads = [threading.Thread(target=post, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.status_code for r in answers) == [200, 409]
    assert [r.json()["code"] for r in answers if r.status_code == 409] == ["run_not_failed"]
    assert len(retry_rows(run.id)) == 1
    wait_run(api("owner"), str(run.id), "paused")
    assert AgentRun.objects.get(pk=run.id).segments == 1  # the one segment, run once more


def test_retry_with_an_idempotency_key_replays(api, users):
    run = failed_run(users["owner"])
    owner = api("owner")
    headers = {"Idempotency-Key": f"retry-{run.id}"}
    first = owner.post(f"/api/runs/{run.id}/retry/", headers=headers)
    again = owner.post(f"/api/runs/{run.id}/retry/", headers=headers)
    assert first.status_code == again.status_code == 200
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json() == first.json()
    assert len(retry_rows(run.id)) == 1
    wait_run(owner, str(run.id), "paused")


def test_schema_documents_retry_and_usage(api):
    schema = api("owner").get("/api/schema/", params={"format": "json"}).json()
    op = schema["paths"]["/api/runs/{id}/retry/"]["post"]
    assert {"200", "401", "403", "404", "409"} <= set(op["responses"])
    conflict = op["responses"]["409"]["description"]
    assert "run_not_failed" in conflict and "thread_moved_on" in conflict
    assert any(p["name"] == "Idempotency-Key" for p in op["parameters"])
    run = schema["components"]["schemas"]["Run"]["properties"]
    assert {"retries", "retry_budget", "retry_at", "retry_reason", "error", "error_detail",
            "model_name", "input_tokens", "output_tokens", "total_tokens", "usage"} <= set(run)
    assert "retrying" in schema["components"]["schemas"]["RunStatusEnum"]["enum"] or any(
        "retrying" in (s.get("enum") or []) for s in schema["components"]["schemas"].values())

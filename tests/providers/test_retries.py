"""Issue 28 finding 3: a provider blip is retried, a permanent error fails at once in
plain words, and a failed run can be retried by hand.

The provider services run with MODEL_MAX_RETRIES=0 (each failure the fake server
scripts is one segment attempt), a run budget of 3 (MODEL_RUN_RETRIES) and a 0.5 s
backoff doubled to at most 2 s (tests/providers/conftest.py).
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any

import httpx
import pytest

from runs.models import AgentRun, AuditLog
from tests.helpers import FINAL, published_events, start_run, wait_run
from tests.providers.conftest import PROVIDER_ENV

BUDGET = int(PROVIDER_ENV["MODEL_RUN_RETRIES"])
TECHNICAL = ("Error code", "Traceback", "Exception", "Error:", "{'", "openai", "OpenAI")


def retrying_events(run_id: str) -> list[dict[str, Any]]:
    return [e["value"] for e in published_events(run_id)
            if e["type"] == "CUSTOM" and e["name"] == "agentsite.retrying"]


def retrying_audits(run_id: str) -> list[AuditLog]:
    return list(AuditLog.objects.filter(run_id=run_id, action=AuditLog.Action.RUN_STATUS,
                                        to_status="retrying"))


def wait_seen(client: httpx.Client, run_id: str, status: str, timeout: float = 30) -> dict:
    """The run's detail the first time it is seen in ``status`` (polled every 20 ms)."""
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = client.get(f"/api/runs/{run_id}/").json()
        if body["status"] == status:
            return body
        assert body["status"] not in FINAL, body
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} never seen {status}: {body}")


def assert_plain(error: str) -> None:
    assert error and not any(word in error for word in TECHNICAL), error
    assert error.endswith("You can retry."), error


def test_rate_limited_twice_then_heals(papi, provider):
    owner = papi("owner")
    # Retry-After 1.5 s outlasts the first backoffs (0.5 s, 1 s): the provider's wins.
    provider.fault("429", times=2, retry_after=1.5)
    run = start_run(owner, "assistant", message="What are your opening hours?")
    waiting = wait_seen(owner, run["id"], "retrying")
    assert waiting["retries"] == 1 and waiting["retry_budget"] == BUDGET
    assert "429" in waiting["retry_reason"] and "rate" in waiting["retry_reason"].lower()
    due = datetime.fromisoformat(waiting["retry_at"].replace("Z", "+00:00"))
    updated = datetime.fromisoformat(waiting["updated_at"].replace("Z", "+00:00"))
    assert 1.0 <= (due - updated).total_seconds() <= 2.5, waiting
    assert waiting["error_detail"] and "429" in waiting["error_detail"]

    done = wait_run(owner, run["id"], FINAL, timeout=20)
    assert done["status"] == "completed", done
    assert done["retries"] == 2
    assert [r.answer for r in provider.requests()] == ["429", "429", "ok"]
    assert done["result"]["answer"] == provider.requests()[-1].reply["text"]
    values = retrying_events(run["id"])
    assert [(v["attempt"], v["of"]) for v in values] == [(1, BUDGET), (2, BUDGET)]
    assert all(v["delaySeconds"] == 1.5 and "429" in v["reason"] and v["retryAt"]
               for v in values), values
    assert len(retrying_audits(run["id"])) == 2
    # One AG-UI run throughout: the attempts continue it.
    types = [e["type"] for e in published_events(run["id"])]
    assert types.count("RUN_STARTED") == 1 and types[-1] == "RUN_FINISHED", types
    assert "RUN_ERROR" not in types


@pytest.mark.parametrize("kind, words", [
    ("500", "(500)"),
    ("malformed", ""),
    ("cut", ""),
])
def test_transient_failures_are_retried(papi, provider, kind, words):
    owner = papi("owner")
    provider.fault(kind)
    run = start_run(owner, "assistant", message="What are your opening hours?")
    done = wait_run(owner, run["id"], FINAL, timeout=20)
    assert done["status"] == "completed", (done["error"], done["error_detail"])
    assert done["retries"] == 1
    assert [r.answer for r in provider.requests()] == [kind, "ok"]
    [value] = retrying_events(run["id"])
    assert value["attempt"] == 1 and value["reason"] and words in value["reason"], value
    assert value["delaySeconds"] == float(PROVIDER_ENV["MODEL_RETRY_BACKOFF_SECONDS"])
    assert len(retrying_audits(run["id"])) == 1


def test_a_hung_provider_times_out_and_is_retried(papi, provider):
    owner = papi("owner")
    provider.fault("hang")  # until released: the client gives up first
    run = start_run(owner, "assistant", message="What are your opening hours?")
    provider.wait_hanging(1)
    waiting = wait_seen(owner, run["id"], "retrying",
                        timeout=float(PROVIDER_ENV["MODEL_TIMEOUT_SECONDS"]) + 10)
    assert "time" in waiting["retry_reason"].lower(), waiting["retry_reason"]
    done = wait_run(owner, run["id"], FINAL, timeout=20)
    assert done["status"] == "completed", (done["error"], done["error_detail"])
    assert done["retries"] == 1
    assert [r.answer for r in provider.requests()][1:] == ["ok"]


def test_bad_credentials_fail_at_once_in_plain_words(papi, provider):
    owner = papi("owner")
    provider.fault("401")
    run = start_run(owner, "assistant", message="What are your opening hours?")
    failed = wait_run(owner, run["id"], FINAL, timeout=20)
    assert failed["status"] == "failed"
    assert failed["retries"] == 0 and not retrying_events(run["id"])
    assert len(provider.requests()) == 1
    assert_plain(failed["error"])
    assert "401" in failed["error"]
    assert "401" in failed["error_detail"] and "Incorrect API key" in failed["error_detail"]
    types = [e["type"] for e in published_events(run["id"])]
    assert types[-1] == "RUN_ERROR", types


def test_budget_exhausted_fails(papi, provider):
    owner = papi("owner")
    provider.fault("500", times=BUDGET + 1)
    run = start_run(owner, "assistant", message="What are your opening hours?")
    failed = wait_run(owner, run["id"], FINAL, timeout=30)
    assert failed["status"] == "failed"
    assert failed["retries"] == BUDGET
    assert [r.answer for r in provider.requests()] == ["500"] * (BUDGET + 1)
    assert_plain(failed["error"])
    assert "500" in failed["error"] and "500" in failed["error_detail"]
    values = retrying_events(run["id"])
    assert [v["attempt"] for v in values] == list(range(1, BUDGET + 1))
    # 0.5 s doubled each time, at most MODEL_RETRY_BACKOFF_MAX_SECONDS.
    assert [v["delaySeconds"] for v in values] == [0.5, 1.0, 2.0]
    assert published_events(run["id"])[-1]["type"] == "RUN_ERROR"
    # The provider is back: a person retries the run, and it completes.
    assert owner.post(f"/api/runs/{run['id']}/retry/").status_code // 100 == 2
    done = wait_run(owner, run["id"], FINAL, timeout=20)
    assert done["status"] == "completed", (done["error"], done["error_detail"])
    assert [r.answer for r in provider.requests()] == ["500"] * (BUDGET + 1) + ["ok"]


def test_manual_retry_goes_on_from_the_last_checkpoint(papi, provider):
    """The answer given before the failure is not asked again: the retried segment
    sends the model the conversation with it."""
    owner = papi("owner")
    run = start_run(owner, "assistant", message="help me with my order")
    run = wait_run(owner, run["id"], "paused")
    provider.fault("401")  # the model call after the answer
    answered = owner.post(f"/api/runs/{run['id']}/resume/", json={
        "interrupt_id": run["pending_interrupts"][0]["interrupt_id"],
        "payload": {"value": "Order status"}})
    assert answered.status_code == 202, answered.text
    assert wait_run(owner, run["id"], FINAL, timeout=20)["status"] == "failed"
    assert owner.post(f"/api/runs/{run['id']}/retry/").status_code // 100 == 2
    done = wait_run(owner, run["id"], FINAL, timeout=20)
    assert done["status"] == "completed", (done["error"], done["error_detail"])
    assert not done["pending_interrupts"]
    asked, refused, retried = provider.requests()
    assert (asked.answer, refused.answer, retried.answer) == ("ok", "401", "ok")
    # The retried call is the failed one again: same conversation, the answer in it.
    assert retried.messages == refused.messages
    assert retried.messages[-1]["role"] == "tool"
    assert retried.messages[-1]["content"] == "User chose: Order status"
    assert done["result"]["answer"] == retried.reply["text"]


def test_manual_retry_continues_a_failed_run_once(papi, provider):
    owner, outsider, anonymous = papi("owner"), papi("outsider"), papi(None)
    provider.fault("401")
    run = start_run(owner, "assistant", message="What are your opening hours?")
    assert wait_run(owner, run["id"], FINAL, timeout=20)["status"] == "failed"
    url = f"/api/runs/{run['id']}/retry/"
    assert outsider.post(url).status_code == 404
    assert anonymous.post(url).status_code in (401, 403)
    assert AgentRun.objects.get(pk=run["id"]).status == "failed"

    # Two clicks at once: one continues the run, the other is told it no longer can.
    barrier, answers = threading.Barrier(2), []

    def click() -> None:
        with httpx.Client(base_url=str(owner.base_url), headers=owner.headers,
                          timeout=30) as client:
            barrier.wait()
            answers.append(client.post(url))

    clicks = [threading.Thread(target=click) for _ in range(2)]
    for t in clicks:
        t.start()
    for t in clicks:
        t.join()
    codes = sorted(r.status_code for r in answers)
    assert codes[0] // 100 == 2 and codes[1] == 409, [r.text for r in answers]
    conflict = next(r for r in answers if r.status_code == 409).json()
    assert "run_not_failed" in str(conflict), conflict

    done = wait_run(owner, run["id"], FINAL, timeout=20)
    assert done["status"] == "completed", (done["error"], done["error_detail"])
    assert done["result"]["answer"] == provider.requests()[-1].reply["text"]
    assert [r.answer for r in provider.requests()] == ["401", "ok"]
    retried = AuditLog.objects.filter(run_id=run["id"], to_status="retrying")
    assert [(a.actor_id, a.surface) for a in retried] == [(owner_id(run), "api")]
    # Done: retrying it again is a conflict.
    assert owner.post(url).status_code == 409


def owner_id(run: dict) -> int:
    return AgentRun.objects.get(pk=run["id"]).owner_id

"""The LangGraph Platform door (/lg/) checks a token's scope like the others, for every
role, through the LangGraph SDK (X-Api-Key): a ``read`` token reads and searches but
cannot start, resume or cancel (403, nothing consumed); an ``answer`` token resumes what
its user may; anonymous is 401; over the limits a 429 with Retry-After."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings
from langgraph_sdk import get_sync_client

from hitl.models import AgentInterrupt
from runs.models import AgentRun
from tests.accounts import make_token
from tests.security.test_request_limits import WINDOW, fresh_window, new_address

pytestmark = pytest.mark.django_db(transaction=True)


def _status(call) -> int:
    try:
        call()
    except Exception as err:  # noqa: BLE001 - the SDK's typed errors / httpx's
        return getattr(err, "status_code", None) or err.response.status_code
    return 200


@pytest.fixture
def sdk(live, users):
    def make(who: str, scopes: str):
        return get_sync_client(url=live["base_url"] + "/lg",
                               api_key=make_token(users[who], scopes), timeout=60)
    return make


@pytest.fixture
def paused(sdk) -> dict:
    owner = sdk("owner", "admin")
    tid = owner.threads.create()["thread_id"]
    owner.runs.wait(tid, "dev", input={"topic": "scopes"})
    run = AgentRun.objects.get(thread_id=tid)
    return {"thread_id": tid, "run_id": str(run.id)}


@pytest.mark.parametrize("who", ["owner", "reviewer", "outsider"])
def test_a_read_token_reads_but_cannot_start_resume_or_cancel(sdk, paused, who):
    tid, rid = paused["thread_id"], paused["run_id"]
    client = sdk(who, "read")
    seen = 404 if who == "outsider" else 200
    assert _status(lambda: client.threads.get(tid)) in (seen, 404)  # a reviewer: REST's view
    assert _status(lambda: client.threads.search()) == 200
    calls = [lambda: client.runs.wait(tid, "dev", command={"resume": {"value": "x"}}),
             lambda: client.runs.cancel(tid, rid),
             lambda: client.runs.create(None, "dev", input={}),
             lambda: client.threads.create()]
    assert [_status(c) for c in calls] == [403] * len(calls)
    assert AgentInterrupt.objects.get(run_id=rid).status == "pending"
    assert AgentRun.objects.count() == 1


def test_an_answer_token_resumes_and_cannot_start(sdk, paused):
    tid = paused["thread_id"]
    client = sdk("owner", "answer")
    assert _status(lambda: client.runs.create(None, "dev", input={})) == 403
    client.runs.wait(tid, "dev", command={"resume": {"value": "Ada"}})
    assert AgentInterrupt.objects.filter(run_id=paused["run_id"]).exclude(
        status="pending").exists()  # the question answered


def test_anonymous_is_401(live):
    client = get_sync_client(url=live["base_url"] + "/lg", api_key=None, timeout=30)
    assert _status(lambda: client.threads.search()) == 401


@override_settings(THROTTLE_TOKEN_RATE=f"2/{WINDOW}s", THROTTLE_ADDRESS_RATE=f"100/{WINDOW}s")
def test_over_the_limit_is_429_with_retry_after(users):
    client = Client(REMOTE_ADDR=new_address(), HTTP_X_API_KEY=make_token(users["owner"], "read"))
    fresh_window()
    assert [client.get("/lg/info").status_code for _ in range(2)] == [200, 200]
    over = client.get("/lg/info")
    assert over.status_code == 429 and over["Retry-After"] in ("1", "2")
    assert set(over.json()) == {"detail"}  # the Platform's error shape

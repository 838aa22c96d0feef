"""Every door checks a token's scope, for every role: REST, AG-UI and the SSE streams.

A ``read`` token cannot answer (403 ``insufficient_scope``, nothing consumed), nor start;
an ``answer`` token answers what its user may; scopes never add a permission (an
outsider's ``answer`` token still gets 404); anonymous is 401 everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from agentsite.models import IdempotencyKey
from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from tests.accounts import make_token
from tests.agui_client import resume, run_input
from tests.helpers import pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)
ROLES = ("owner", "reviewer", "outsider")


@pytest.fixture
def scoped(live, users) -> Callable[[str | None, str], httpx.Client]:
    """scoped("reviewer", "read") → a client with a new token of that role and scope."""
    clients: list[httpx.Client] = []

    def make(who: str | None, scopes: str = "read") -> httpx.Client:
        headers = {"Authorization": f"Token {make_token(users[who], scopes)}"} if who else {}
        clients.append(httpx.Client(base_url=live["base_url"], headers=headers, timeout=30))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def paused(api) -> dict:
    owner = api("owner")
    return wait_run(owner, start_run(owner)["id"], "paused")


def _untouched(run: dict, audits: int) -> None:
    assert AgentRun.objects.get(pk=run["id"]).status == "paused"
    assert AgentInterrupt.objects.get(interrupt_id=pending(run)["interrupt_id"]).status == \
        "pending"
    assert AuditLog.objects.filter(run_id=run["id"]).count() == audits


def _answer_everywhere(client: httpx.Client, run: dict) -> list[httpx.Response]:
    """Every way to answer or change the run: REST resume, decision, cancel, retry; AG-UI
    resume."""
    item = pending(run)
    return [
        client.post(f"/api/runs/{run['id']}/resume/",
                    json={"interrupt_id": item["interrupt_id"], "payload": {"value": "x"}},
                    headers={"Idempotency-Key": "scoped-resume"}),
        client.post(f"/api/interrupts/{item['id']}/decision/", json={"payload": {"value": "x"}}),
        client.post(f"/api/runs/{run['id']}/cancel/"),
        client.post(f"/api/runs/{run['id']}/retry/"),
        client.post("/agui/dev/", json=resume(run["thread_id"], item["interrupt_id"],
                                              {"value": "x"})),
    ]


def _read_everywhere(client: httpx.Client, run: dict) -> list[int]:
    """Statuses of reading the run at each door: REST, its SSE stream, AG-UI connect."""
    statuses = [client.get(f"/api/runs/{run['id']}/").status_code,
                client.get(f"/api/interrupts/{pending(run)['id']}/").status_code]
    with client.stream("GET", f"/api/runs/{run['id']}/events/") as stream:
        statuses.append(stream.status_code)
    with client.stream("POST", "/agui/dev/connect/",
                       json=run_input(run["thread_id"])) as stream:
        statuses.append(stream.status_code)
    return statuses


@pytest.mark.parametrize("who", ROLES)
def test_a_read_token_reads_what_its_user_may_and_answers_nothing(scoped, paused, who):
    audits = AuditLog.objects.filter(run_id=paused["id"]).count()
    client = scoped(who, "read")
    assert _read_everywhere(client, paused) == ([404] * 4 if who == "outsider" else [200] * 4)
    for response in _answer_everywhere(client, paused):
        assert response.status_code == 403, (response.request.url, response.text)
        assert response.json()["code"] == "insufficient_scope", response.text
    # Nor start a run, at either door.
    assert client.post("/api/runs/", json={"agent": "dev"}).json()["code"] == \
        "insufficient_scope"
    refused = client.post("/agui/dev/", json=run_input())
    assert refused.status_code == 403 and refused.json()["code"] == "insufficient_scope"
    _untouched(paused, audits)
    assert AgentRun.objects.count() == 1
    assert not IdempotencyKey.objects.exists()  # refused before the key was claimed


@pytest.mark.parametrize("who", ["owner", "reviewer"])
def test_an_answer_token_answers_at_the_rest_door(scoped, paused, who):
    client = scoped(who, "answer")
    r = client.post(f"/api/interrupts/{pending(paused)['id']}/decision/",
                    json={"payload": {"value": "Ada"}})
    assert r.status_code == 202, r.text
    # …and cannot start a run.
    assert client.post("/api/runs/", json={"agent": "dev"}).status_code == 403


@pytest.mark.parametrize("who", ["owner", "reviewer"])
def test_an_answer_token_answers_at_the_agui_door(scoped, paused, who):
    client = scoped(who, "answer")
    body = resume(paused["thread_id"], pending(paused)["interrupt_id"], {"value": "Ada"})
    with client.stream("POST", "/agui/dev/", json=body) as stream:
        assert stream.status_code == 200
        stream.read()
    assert AgentInterrupt.objects.get(
        interrupt_id=pending(paused)["interrupt_id"]).status != "pending"


def test_an_outsiders_answer_token_adds_no_permission(scoped, paused):
    audits = AuditLog.objects.filter(run_id=paused["id"]).count()
    statuses = [r.status_code for r in _answer_everywhere(scoped("outsider", "answer admin"),
                                                          paused)]
    assert statuses == [404] * 5
    _untouched(paused, audits)


def test_a_start_token_starts_at_both_doors_and_answers_nothing(scoped, paused):
    client = scoped("owner", "start")
    assert client.post("/api/runs/", json={"agent": "dev"}).status_code == 201
    with client.stream("POST", "/agui/dev/", json=run_input()) as stream:
        assert stream.status_code == 200
        stream.read()
    assert {r.status_code for r in _answer_everywhere(client, paused)} == {403}


def test_anonymous_is_401_at_every_door(scoped, paused):
    client = scoped(None)
    assert set(_read_everywhere(client, paused)) == {401}
    assert {r.status_code for r in _answer_everywhere(client, paused)} == {401}

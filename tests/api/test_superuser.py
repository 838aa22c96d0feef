"""One rule for superusers on every surface (hitl.selectors): a superuser is a reviewer,
so they may see, answer and cancel anyone's run, over REST, AG-UI, SSE, the chat pages
and the admin alike. (Before: REST answered 404 to reading a run the same superuser could
resume and cancel; the chat page refused their cancel.)"""

from __future__ import annotations

import time

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from runs.models import AgentRun, AuditLog
from tests.accounts import make_token
from tests.agui_client import post_events, resume, run_input
from tests.helpers import pending, start_run, wait_run
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def root(live, users):
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    client = httpx.Client(base_url=live["base_url"], timeout=30,
                          headers={"Authorization": f"Token {make_token(user)}"})
    yield user, client
    client.close()


def _audit(run_id: str, action: str) -> AuditLog:
    return AuditLog.objects.filter(run_id=run_id, action=action).order_by("-id").first()


def test_rest_superuser_reads_answers_and_cancels_anyones_run(api, root):
    user, su = root
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    seen = su.get(f"/api/runs/{run['id']}/")
    assert seen.status_code == 200, seen.text
    assert seen.json()["owner"] == "owner" and pending(seen.json())["kind"] == "input"
    conversation = run["conversation_id"]
    assert su.get(f"/api/conversations/{conversation}/").status_code == 200
    assert su.get(f"/api/conversations/{conversation}/messages/").status_code == 200
    assert su.get(f"/api/interrupts/{pending(run)['id']}/").status_code == 200
    # Their list is their own runs (the work list of others' is /api/interrupts/).
    assert su.get("/api/runs/").json()["count"] == 0
    r = su.post(f"/api/runs/{run['id']}/resume/", json={
        "interrupt_id": pending(run)["interrupt_id"], "payload": {"value": "Zed"}})
    assert r.status_code == 202, r.text
    assert _audit(run["id"], "decision").actor_id == user.pk
    run = wait_run(su, run["id"], "paused")  # read by the superuser all along
    assert run["segments"] == 2
    r = su.post(f"/api/runs/{run['id']}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert _audit(run["id"], "run.status").actor_id == user.pk


def test_sse_and_agui_superuser_watches_and_answers_anyones_run(api, root):
    user, su = root
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    with SseStream(su, f"/api/runs/{run['id']}/events/") as stream:
        assert stream.status == 200
        assert stream.next().json()["type"] == "RUN_STARTED"
    thread = run["conversation_id"]  # the conversation id is the AG-UI thread id
    connected = post_events(su, "/agui/dev/connect/", run_input(thread))
    outcome = connected[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    item = pending(run)
    assert [i["id"] for i in outcome["interrupts"]] == [item["interrupt_id"]]
    events = post_events(su, "/agui/dev/", resume(thread, item["interrupt_id"],
                                                   {"value": "Zed"}))
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    decision = _audit(run["id"], "decision")
    assert decision.actor_id == user.pk and decision.surface == "agui"
    assert wait_run(owner, run["id"], "paused")["segments"] == 2


def test_pages_and_admin_superuser_answers_and_cancels_anyones_run(api, root):
    user, _ = root
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    conversation, item = run["conversation_id"], pending(run)
    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/c/{conversation}/")
    assert page.status_code == 200
    assert 'id="cancel-form"' in page.content.decode()
    assert 'id="composer"' not in page.content.decode()  # not theirs to write in
    # The admin shows them the question and the run.
    assert browser.get(f"/admin/hitl/agentinterrupt/{item['id']}/change/").status_code == 200
    assert browser.get(f"/admin/runs/agentrun/{run['id']}/change/").status_code == 200
    r = browser.post(f"/c/{conversation}/answer/{item['interrupt_id']}/", {"value": "Zed"})
    assert r.status_code == 302, r.content.decode()[:500]
    decision = _audit(run["id"], "decision")
    assert decision.actor_id == user.pk and decision.surface == "page"
    wait_run(owner, run["id"], "paused")
    assert browser.post(f"/c/{conversation}/cancel/").status_code == 302
    deadline = time.monotonic() + 10
    while AgentRun.objects.get(pk=run["id"]).status != "cancelled":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    ended = _audit(run["id"], "run.status")
    assert ended.actor_id == user.pk and ended.surface == "page"

"""Notifications: emails (Django's email framework; locmem here, the console backend in the
test worker) to the assignees or the requester, and signed webhooks delivered by Celery
with retries and backoff, logged per attempt."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from hitl import notify
from hitl.models import AgentWebhook, Notification, WebhookDelivery
from tests.helpers import pending, wait_run
from tests.policies.conftest import ask


def _until(check, timeout: float = 20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_emails_go_to_assignees_or_the_requester(client_of, live, mailoutbox):
    owner = client_of("owner")
    run = ask(owner, assignees=["alice"], groups=["legal"])
    item = pending(run)
    # The worker sent them on commit (its console backend writes them to its log).
    _until(lambda: "To: alice@example.com" in live["worker"].log()
           and "To: carol@example.com" in live["worker"].log())
    # The same task body, here with Django's locmem backend.
    sent = notify.deliver(event="interrupt.created", run_id=run["id"], interrupt_pk=item["id"])
    assert sent == {"emails": 2, "webhooks": 0}
    assert sorted(m.to[0] for m in mailoutbox) == ["alice@example.com", "carol@example.com"]
    message = mailoutbox[0]
    assert message.subject == "[agentsite] Waiting for an answer: Ship it?"
    assert f"/admin/hitl/agentinterrupt/{item['id']}/change/" in message.body
    mailoutbox.clear()
    # No assignees: the requester is told.
    other = ask(owner)
    notify.deliver(event="interrupt.created", run_id=other["id"],
                   interrupt_pk=pending(other)["id"])
    assert [m.to for m in mailoutbox] == [["owner@example.com"]]
    mailoutbox.clear()
    # Escalation tells the groups' members; a run's end its assignees.
    notify.deliver(event="interrupt.escalated", run_id=other["id"],
                   interrupt_pk=pending(other)["id"], groups=["legal"])
    assert [m.to for m in mailoutbox] == [["carol@example.com"]]
    assert mailoutbox[0].subject.startswith("[agentsite] Escalated to you")
    mailoutbox.clear()
    r = client_of("alice").post(f"/api/interrupts/{item['id']}/decision/",
                                json={"payload": {"approved": True}})
    assert r.status_code == 202
    wait_run(owner, run["id"], "completed")
    # The worker told them of the end too (the run had assignees: the task was sent).
    _until(lambda: "Subject: [agentsite] policy_ask run completed" in live["worker"].log())
    notify.deliver(event="run.finished", run_id=run["id"])
    assert sorted(m.to[0] for m in mailoutbox) == ["alice@example.com", "carol@example.com"]
    assert mailoutbox[0].subject == "[agentsite] policy_ask run completed"


def test_a_run_end_is_announced_only_when_it_reaches_someone(people):
    """The run-finished task is sent only if the end would reach someone: an assignee of
    one of the run's questions, the requester by email, or a webhook of the agent."""
    from hitl.models import AgentInterrupt
    from runs.models import AgentRun, Conversation

    owner = people["owner"]
    owner.email = ""
    owner.save()
    conversation = Conversation.objects.create(owner=owner, agent="policy_ask")
    run = AgentRun.objects.create(owner=owner, conversation=conversation, agent="policy_ask",
                                  thread_id=conversation.thread_id, status="running")

    def reaches() -> bool:
        return notify.anyone_for_end(AgentRun.objects.annotate(**notify.RUN_FACTS).get(
            pk=run.pk))

    assert not reaches()  # no email, no assignee, no webhook: no task
    question = AgentInterrupt.objects.create(run=run, interrupt_id="q1", kind="approval",
                                             request={"type": "approval"})
    assert not reaches()
    question.assigned_groups.add(people["legal"])
    assert reaches()
    question.assigned_groups.clear()
    question.assignees.add(people["alice"])
    assert reaches()
    question.assignees.clear()
    owner.email = "owner@example.com"
    owner.save()
    assert reaches()
    owner.email = ""
    owner.save()
    AgentWebhook.objects.create(agent="policy_ask", url="http://127.0.0.1:9/hook", secret="s")
    assert reaches()


class _Receiver(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []
    codes: list[int] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((dict(self.headers), body))
        code = type(self).codes.pop(0) if type(self).codes else 200
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver():
    _Receiver.received, _Receiver.codes = [], [500]  # the first delivery fails
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_webhook_signed_and_retried_after_500(client_of, receiver):
    secret = "s3cret"
    hook = AgentWebhook.objects.create(
        agent="policy_ask", url=f"http://127.0.0.1:{receiver.server_address[1]}/hook",
        secret=secret)
    owner = client_of("owner")
    run = ask(owner, assignees=["alice"])
    item = pending(run)
    delivery = _until(lambda: WebhookDelivery.objects.filter(
        webhook=hook, event="interrupt.created", status="delivered").first())
    assert delivery.attempts == 2 and delivery.last_status_code == 200
    # Every attempt in the delivery log; the notification (outbox row) marked sent.
    assert [e["status_code"] for e in delivery.attempt_log] == [500, 200]
    assert [e["ok"] for e in delivery.attempt_log] == [False, True]
    notice = Notification.objects.get(run_id=run["id"], event="interrupt.created")
    assert notice.status == "sent" and notice.attempts == 1
    assert len(_Receiver.received) == 2
    for headers, raw in _Receiver.received:
        expected = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
        assert headers["X-Agentsite-Signature"] == expected
        assert headers["X-Agentsite-Event"] == "interrupt.created"
    body = json.loads(_Receiver.received[-1][1])
    assert body["event"] == "interrupt.created"
    assert body["run"]["id"] == run["id"] and body["interrupt"]["id"] == item["id"]
    assert body["interrupt"]["assignees"] == ["alice"]
    decide = f"/admin/hitl/agentinterrupt/{item['id']}/change/"
    assert body["interrupt"]["decide_url"].endswith(decide)
    # The run's end is delivered too.
    r = client_of("alice").post(f"/api/interrupts/{item['id']}/decision/",
                                json={"payload": {"approved": True}})
    assert r.status_code == 202
    wait_run(owner, run["id"], "completed")
    finished = _until(lambda: WebhookDelivery.objects.filter(
        webhook=hook, event="run.finished", status="delivered").first())
    assert finished.attempts == 1 and finished.body["run"]["status"] == "completed"
    # The delivery log in the admin.
    admin = Client()
    admin.force_login(get_user_model().objects.create_superuser("root", "root@example.com",
                                                                "pw-root"))
    log = admin.get("/admin/hitl/webhookdelivery/").content.decode()
    assert "interrupt.created" in log and "run.finished" in log and "delivered" in log


def test_webhook_gives_up_after_its_retries(client_of, receiver):
    _Receiver.codes = [500] * 20
    hook = AgentWebhook.objects.create(
        agent="policy_ask", url=f"http://127.0.0.1:{receiver.server_address[1]}/hook",
        secret="k")
    ask(client_of("owner"))
    failed = _until(lambda: WebhookDelivery.objects.filter(
        webhook=hook, event="interrupt.created", status="failed").first(), timeout=40)
    # The first attempt and HITL_WEBHOOK_MAX_RETRIES (5) retries, 0.2 s apart and doubling.
    assert failed.attempts == 6 and failed.last_status_code == 500
    assert failed.last_error == "HTTP 500" and len(_Receiver.received) == 6


def test_a_notification_is_a_row_of_the_transaction_that_makes_it_due(people):
    """Written with the change (rolled back with it); its task is sent only on commit."""
    from django.db import transaction

    from runs.models import AgentRun, Conversation

    owner = people["owner"]
    conversation = Conversation.objects.create(owner=owner, agent="policy_ask")
    run = AgentRun.objects.create(owner=owner, conversation=conversation, agent="policy_ask",
                                  thread_id=conversation.thread_id, status="completed")
    with pytest.raises(RuntimeError), transaction.atomic():
        notify.on_commit("run.finished", run=run)
        assert Notification.objects.filter(run=run).count() == 1
        raise RuntimeError("the change fails")
    assert not Notification.objects.filter(run=run).exists()
    # (Written directly: on_commit would send the task to the suite's worker too.)
    row = Notification.objects.create(run=run, event="run.finished")
    # The task's body, in process: emails (locmem) sent, the row marked, the attempt logged.
    assert notify.notification_send(row.pk) == {"emails": 1, "webhooks": 0}
    row.refresh_from_db()
    assert row.status == "sent" and row.attempts == 1 and row.attempt_log[0]["emails"] == 1
    assert notify.notification_send(row.pk) is None  # a duplicate task: nothing twice

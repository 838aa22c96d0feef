"""A run's own ``webhook`` through langgraph-sdk: when the run ends, a real local receiver
gets the run in the Platform's shape with the thread's values, signed, through the site's
webhook delivery (a first 500 is retried, the attempts logged); a bad or internal URL is
a 422 and nothing is made."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from hitl.models import WebhookDelivery
from runs.models import AgentRun
from tests.conftest import RUN_WEBHOOK_SECRET

pytestmark = pytest.mark.django_db(transaction=True)


class _Receiver(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []
    codes: list[int] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((dict(self.headers), body))
        self.send_response(type(self).codes.pop(0) if type(self).codes else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Any:
    _Receiver.received, _Receiver.codes = [], [500]  # the first attempt fails
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()
    server.server_close()


def _until(found: Any, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_the_run_is_posted_to_its_webhook_when_it_ends(lg, receiver):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "adopter_string", input={}, webhook=receiver)
    assert "__interrupt__" in client.runs.join(tid, run["run_id"])
    # A pause is not the run's end here (the same run goes on when answered): no POST.
    assert not WebhookDelivery.objects.filter(url=receiver).exists()

    client.runs.wait(tid, "adopter_string", command={"resume": "Apollo 11"})
    delivery = _until(lambda: WebhookDelivery.objects.filter(
        url=receiver, status="delivered").first())
    assert delivery.webhook is None and delivery.event == "run.finished"
    assert [e["status_code"] for e in delivery.attempt_log] == [500, 200]
    assert len(_Receiver.received) == 2
    headers, raw = _Receiver.received[-1]
    expected = hmac.new(RUN_WEBHOOK_SECRET.encode(), raw, hashlib.sha256).hexdigest()
    assert headers["X-Agentsite-Signature"] == "sha256=" + expected
    body = json.loads(raw)
    assert (body["run_id"], body["thread_id"], body["status"]) == (
        run["run_id"], tid, "success")
    assert body["assistant_id"] == run["assistant_id"] and body["error"] is None
    assert body["values"]["result"] == {"received": "Apollo 11"}
    assert body["run_ended_at"] and body["webhook_sent_at"]


def test_a_cancelled_run_is_posted_too(lg, receiver):
    _Receiver.codes = []
    client = lg("owner")
    out = client.runs.wait(None, "adopter_string", input={}, webhook=receiver)
    assert "__interrupt__" in out
    run = AgentRun.objects.get(webhook=receiver)
    client.runs.cancel(run.thread_id, str(run.id))
    _until(lambda: _Receiver.received)
    body = json.loads(_Receiver.received[0][1])
    assert (body["run_id"], body["status"]) == (str(run.id), "interrupted")


@pytest.mark.parametrize("webhook", [
    "ftp://example.com/hook", "not a url", "http:///nohost", "http://example.com/" + "a" * 600,
    "http://169.254.169.254/latest/meta-data", "http://10.0.0.1/hook", 12])
def test_a_bad_or_internal_webhook_is_refused(live, users, webhook):
    before = AgentRun.objects.count()
    response = httpx.post(live["base_url"] + "/lg/runs", timeout=30,
                          headers={"X-Api-Key": users["owner_token"]},
                          json={"assistant_id": "adopter_string", "input": {},
                                "webhook": webhook})
    assert response.status_code == 422, response.text
    assert set(response.json()) == {"detail"}
    assert AgentRun.objects.count() == before

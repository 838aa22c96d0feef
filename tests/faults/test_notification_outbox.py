"""A notification owed while the broker (Redis) is down is not lost: it is a row
(``hitl.models.Notification``) committed with the change that made it due, and once
Redis is back the reaper sends its task again; the worker delivers it and the rows log
every attempt. Own Redis, web and worker (``tests.faults.cluster``), as in
``test_redis_restart``."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hitl.models import AgentWebhook, Notification, WebhookDelivery
from tests.faults.cluster import client, cluster_fixture, wait_all
from tests.faults.test_embedded_restart import _embedded
from tests.faults.test_redis_restart import _kill_redis
from tests.helpers import wait_run

pytestmark = pytest.mark.django_db(transaction=True)
cluster = pytest.fixture(name="cluster")(cluster_fixture)


class _Hook(BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        type(self).received.append(json.loads(self.rfile.read(
            int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hook_server():
    _Hook.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_notification_due_in_a_redis_outage_is_sent_after_it(cluster, users, tmp_path,
                                                                hook_server):
    data_dir = tmp_path / "redis-data"
    url = _embedded(data_dir, "print(e.ensure_redis())")
    c = cluster(redis_url=url, SECRET_KEY="faults-test-key")
    try:
        hook = AgentWebhook.objects.create(
            agent="dev", url=f"http://127.0.0.1:{hook_server.server_address[1]}/hook",
            secret="k")
        c.worker(supervised=True)
        _web, base = c.web()
        api = client(base, users["owner_token"])
        run = wait_run(api, api.post("/api/runs/", json={"agent": "dev"}).json()["id"],
                       "paused")
        # The question's notice went out the ordinary way: row sent, delivery delivered.
        wait_all(lambda: WebhookDelivery.objects.filter(
            webhook=hook, event="interrupt.created", status="delivered").exists(), 30)

        _kill_redis(data_dir)
        cancelled = api.post(f"/api/runs/{run['id']}/cancel/")
        assert cancelled.status_code == 200, cancelled.text
        # Committed with the cancel although its task could not be sent.
        owed = Notification.objects.get(run_id=run["id"], event="run.finished")
        assert owed.status == "pending" and owed.attempts == 0
        assert not WebhookDelivery.objects.filter(event="run.finished").exists()
        time.sleep(2)  # an outage of a few seconds

        assert _embedded(data_dir, "print(e.ensure_redis())") == url
        # No request from anyone: the reaper resends the task, the worker sends it.
        delivery = wait_all(lambda: WebhookDelivery.objects.filter(
            webhook=hook, event="run.finished", status="delivered").first(), 40)
        owed.refresh_from_db()
        assert owed.status == "sent" and owed.sent_at is not None
        assert owed.attempts == 1 and len(owed.attempt_log) == 1
        assert owed.attempt_log[0]["ok"] is True and owed.attempt_log[0]["webhooks"] == 1
        assert delivery.attempts == 1 and delivery.attempt_log[0]["status_code"] == 200
        ends = [b for b in _Hook.received if b["event"] == "run.finished"]
        assert len(ends) == 1 and ends[0]["run"]["status"] == "cancelled"
        # The worker's log says the reaper sent it again.
        assert "pending with no task, sending again" in c.logs()
    finally:
        c.stop()  # before its Redis: a worker whose broker is gone stops slowly
        _embedded(data_dir, "e.stop_redis()")

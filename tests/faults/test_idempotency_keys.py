"""Idempotency keys: a keyed request is one transaction (the key, the view's work and the
stored answer commit together). A retry while the first is in flight is a 409 and runs
nothing; a request whose answer could not be stored keeps nothing, so its retry runs once;
a committed request is replayed, never run twice. The crash itself (a web process killed
mid-request) is in test_idempotency_crash.py."""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from agentsite.idempotency import IN_PROGRESS_SECONDS, KEEP_SECONDS, fingerprint
from agentsite.models import IdempotencyKey
from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog, Conversation
from tests.faults.cluster import wait_all
from tests.helpers import pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"agent": "dev", "input": {"topic": "idem"}}


@contextmanager
def on_stored_answer(action: str, *, at_commit: bool = False) -> Iterator[None]:
    """While inside: ``action`` (PL/pgSQL) runs in Postgres whenever an answer is written to
    a key (a row with a status): as it is written, or ``at_commit`` of its transaction."""
    when = ("CREATE CONSTRAINT TRIGGER test_on_answer AFTER INSERT OR UPDATE ON "
            "agentsite_idempotencykey DEFERRABLE INITIALLY DEFERRED" if at_commit else
            "CREATE TRIGGER test_on_answer BEFORE INSERT OR UPDATE ON agentsite_idempotencykey")
    with connection.cursor() as cursor:
        cursor.execute("CREATE OR REPLACE FUNCTION test_on_answer() RETURNS trigger "
                       "LANGUAGE plpgsql AS $$ BEGIN IF NEW.status IS NOT NULL THEN "
                       f"{action}; END IF; RETURN NEW; END $$")
        cursor.execute(f"{when} FOR EACH ROW EXECUTE FUNCTION test_on_answer()")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER test_on_answer ON agentsite_idempotencykey")
            cursor.execute("DROP FUNCTION test_on_answer()")


def _key() -> dict[str, str]:
    return {"Idempotency-Key": f"k-{uuid.uuid4()}"}


def test_an_answer_that_cannot_be_stored_keeps_nothing_and_the_retry_runs_once(api):
    client, key = api("owner"), _key()
    with on_stored_answer("RAISE EXCEPTION 'no answer stored (test)'"):
        failed = client.post("/api/runs/", json=BODY, headers=key)
    assert failed.status_code >= 500
    # The start was rolled back with its answer: no run, no conversation, no key.
    assert (AgentRun.objects.count(), Conversation.objects.count(),
            IdempotencyKey.objects.count()) == (0, 0, 0)
    retry = client.post("/api/runs/", json=BODY, headers=key)
    assert retry.status_code == 201, retry.text
    assert "Idempotent-Replayed" not in retry.headers
    assert list(AgentRun.objects.values_list("id", flat=True)) == [uuid.UUID(retry.json()["id"])]
    run = wait_run(client, retry.json()["id"], "paused")

    # The same for an answer to a question: no decision recorded, the question still open.
    url, key = f"/api/runs/{run['id']}/resume/", _key()
    body = {"interrupt_id": pending(run)["interrupt_id"], "payload": {"value": "Idem"}}
    with on_stored_answer("RAISE EXCEPTION 'no answer stored (test)'"):
        failed = client.post(url, json=body, headers=key)
    assert failed.status_code >= 500
    assert not AuditLog.objects.filter(run_id=run["id"], action="decision").exists()
    assert AgentInterrupt.objects.get(run_id=run["id"]).status == "pending"
    retry = client.post(url, json=body, headers=key)
    assert retry.status_code == 202, retry.text
    replay = client.post(url, json=body, headers=key)
    assert replay.json() == retry.json() and replay.headers["Idempotent-Replayed"] == "true"
    assert AuditLog.objects.filter(run_id=run["id"], action="decision").count() == 1
    wait_run(client, run["id"], "paused")


def test_a_retry_while_the_first_is_in_flight_is_409_then_replays(api):
    client, key = api("owner"), _key()
    idle = start_run(client)  # a conversation with no active run, to start in again
    wait_run(client, idle["id"], "paused")
    assert client.post(f"/api/runs/{idle['id']}/cancel/").status_code == 200
    body = {**BODY, "thread_id": idle["thread_id"]}
    answers: list = []
    with transaction.atomic():
        # The conversation locked here: the first request stops inside its start.
        Conversation.objects.select_for_update().get(pk=idle["thread_id"])
        first = threading.Thread(target=lambda: answers.append(
            client.post("/api/runs/", json=body, headers=key)))
        first.start()
        with connection.cursor() as cursor:
            def waiting() -> bool:
                # pg_stat_activity is read once per transaction unless told to read again.
                cursor.execute("SELECT pg_stat_clear_snapshot()")
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                               "current_database() AND wait_event_type = 'Lock'")
                return cursor.fetchone()[0] > 0
            wait_all(waiting, 30)
        with api("owner") as other:
            for retry_body in (body, {**body, "input": {"topic": "other"}}):
                retry = other.post("/api/runs/", json=retry_body, headers=key)
                assert retry.status_code == 409, retry.text
                assert retry.json()["code"] == "idempotency_in_progress"
        # Nothing of the first request is visible yet, its key included.
        assert not IdempotencyKey.objects.exists()
    first.join(30)
    assert answers[0].status_code == 201, answers[0].text
    replay = client.post("/api/runs/", json=body, headers=key)
    assert replay.status_code == 201 and replay.json() == answers[0].json()
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert AgentRun.objects.filter(conversation_id=idle["thread_id"]).count() == 2
    wait_run(client, answers[0].json()["id"], "paused")


def test_a_committed_request_is_replayed_until_its_key_expires(api, users):
    client, key = api("owner"), _key()
    first = client.post("/api/runs/", json=BODY, headers=key)
    assert first.status_code == 201
    row = IdempotencyKey.objects.get(user=users["owner"])
    assert row.status == 201 and row.body["id"] == first.json()["id"]
    # Long after any request could still run, within the day the key is kept: a replay.
    IdempotencyKey.objects.update(claimed_at=timezone.now() - timedelta(hours=23))
    again = client.post("/api/runs/", json=BODY, headers=key)
    assert again.status_code == 201 and again.json() == first.json()
    assert AgentRun.objects.count() == 1
    wait_run(client, first.json()["id"], "paused")
    # After the day the key is free: the same key starts a new run.
    IdempotencyKey.objects.update(claimed_at=timezone.now() - timedelta(seconds=KEEP_SECONDS + 1))
    later = client.post("/api/runs/", json=BODY, headers=key)
    assert later.status_code == 201 and later.json()["id"] != first.json()["id"]
    assert "Idempotent-Replayed" not in later.headers
    assert IdempotencyKey.objects.get().body["id"] == later.json()["id"]
    wait_run(client, later.json()["id"], "paused")


def test_a_key_left_in_progress_by_the_earlier_scheme_is_taken_over(api, users):
    # A row with no answer, as the earlier scheme (claim, then work, then store, each
    # committed apart) left behind when a request died.
    client, key = api("owner"), _key()
    IdempotencyKey.objects.create(
        user=users["owner"], key_hash=hashlib.sha256(key["Idempotency-Key"].encode()).hexdigest(),
        token=uuid.uuid4(),
        fingerprint=fingerprint("POST", "/api/runs/", BODY))
    busy = client.post("/api/runs/", json=BODY, headers=key)
    assert busy.status_code == 409 and busy.json()["code"] == "idempotency_in_progress"
    IdempotencyKey.objects.update(
        claimed_at=timezone.now() - timedelta(seconds=IN_PROGRESS_SECONDS + 1))
    taken = client.post("/api/runs/", json=BODY, headers=key)
    assert taken.status_code == 201, taken.text
    replay = client.post("/api/runs/", json=BODY, headers=key)
    assert replay.json() == taken.json() and replay.headers["Idempotent-Replayed"] == "true"
    assert AgentRun.objects.count() == 1
    wait_run(client, taken.json()["id"], "paused")

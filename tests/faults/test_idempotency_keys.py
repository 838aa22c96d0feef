"""Idempotency keys: a retry during the first request is a 409, the answer is stored only by
the request that still holds the key, and a committed request is replayed, never run twice."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.response import Response

from agentsite.idempotency import IN_PROGRESS_SECONDS, claim, fingerprint, release, store
from agentsite.models import IdempotencyKey
from runs.models import AgentRun
from tests.helpers import wait_run

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"agent": "dev", "input": {"topic": "idem"}}


def _age(seconds: float) -> None:
    IdempotencyKey.objects.update(claimed_at=timezone.now() - timedelta(seconds=seconds))


def test_a_retry_while_the_first_runs_is_409_and_runs_nothing(api, users):
    client, key = api("owner"), f"busy-{uuid.uuid4()}"
    # Another request holds the key (claimed exactly as the decorator does, not yet answered).
    first = claim(users["owner"].pk, key, fingerprint("POST", "/api/runs/", BODY))
    retry = client.post("/api/runs/", json=BODY, headers={"Idempotency-Key": key})
    assert retry.status_code == 409, retry.text
    assert retry.json()["code"] == "idempotency_in_progress"
    other = client.post("/api/runs/", json={"agent": "dev"}, headers={"Idempotency-Key": key})
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    assert AgentRun.objects.count() == 0

    # The first request died without an answer: after IN_PROGRESS_SECONDS the key is free again.
    _age(IN_PROGRESS_SECONDS + 1)
    taken = client.post("/api/runs/", json=BODY, headers={"Idempotency-Key": key})
    assert taken.status_code == 201, taken.text
    # The late first request cannot overwrite the answer of the one that took over.
    assert store(first, Response({"id": "stale"}, status=201)) is False
    release(first)
    replay = client.post("/api/runs/", json=BODY, headers={"Idempotency-Key": key})
    assert replay.status_code == 201 and replay.json() == taken.json()
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert AgentRun.objects.count() == 1
    wait_run(client, taken.json()["id"], "paused")


def test_a_committed_request_is_replayed_from_postgres_not_run_again(api, users):
    client, key = api("owner"), f"done-{uuid.uuid4()}"
    first = client.post("/api/runs/", json=BODY, headers={"Idempotency-Key": key})
    assert first.status_code == 201
    row = IdempotencyKey.objects.get(user=users["owner"])
    assert row.status == 201 and row.body["id"] == first.json()["id"]
    # Even long after the in-progress window, within the day the key is kept: a replay.
    _age(IN_PROGRESS_SECONDS * 10)
    again = client.post("/api/runs/", json=BODY, headers={"Idempotency-Key": key})
    assert again.status_code == 201 and again.json() == first.json()
    assert AgentRun.objects.count() == 1
    wait_run(client, first.json()["id"], "paused")


def test_store_and_release_are_compare_and_set(users):
    user = users["owner"].pk
    a = claim(user, "cas", "f" * 64)
    _age(IN_PROGRESS_SECONDS + 1)
    b = claim(user, "cas", "f" * 64)  # takes over the abandoned key
    assert b.token != a.token
    release(a)  # not a's any more: nothing happens
    assert store(a, Response({"who": "a"}, status=201)) is False
    assert store(b, Response({"who": "b"}, status=201)) is True
    row = IdempotencyKey.objects.get()
    assert (row.status, row.body, row.token) == (201, {"who": "b"}, b.token)
    replay = claim(user, "cas", "f" * 64)
    assert isinstance(replay, Response) and replay.data == {"who": "b"}


def test_a_crashed_request_releases_its_key(users):
    held = claim(users["owner"].pk, "crash", "f" * 64)
    release(held)
    assert not IdempotencyKey.objects.exists()

"""``POST /presence/`` refuses what it cannot use with a clear 400 (and anonymous
visitors with a 401), CSRF included, and records nothing then."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_bad_beats_are_refused_clearly(django_user_model):
    user = django_user_model.objects.create(username="bob")
    item = {"run_id": str(uuid.uuid4()), "interrupt_id": "q", "state": "viewing"}
    assert Client().post("/presence/", {"items": json.dumps([item])}).status_code == 401
    client = Client()
    client.force_login(user)
    for bad in ("not json", json.dumps({"run_id": "x"}), json.dumps([{**item, "state": "x"}]),
                json.dumps([{**item, "run_id": "not-a-uuid"}]), json.dumps([item] * 51)):
        response = client.post("/presence/", {"items": bad})
        assert response.status_code == 400 and "items:" in response.json()["detail"], bad
    # Someone else's (or no) question reads as not found: nothing about who is on it.
    assert client.post("/presence/", {"items": json.dumps([item])}).json() == {
        "items": [{"run_id": item["run_id"], "interrupt_id": "q", "error": "not_found"}]}
    # The heartbeat is a write: without the CSRF token it is refused.
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post("/presence/", {"items": json.dumps([item])}).status_code == 403

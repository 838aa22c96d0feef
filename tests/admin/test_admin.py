"""The Django admin shows every model, read-only (business truth changes through services)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.helpers import start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = ["runs/agentrun", "runs/conversation", "runs/message", "runs/auditlog",
         "hitl/agentinterrupt"]


def test_admin_lists_and_shows_every_model(api, client):
    owner = api("owner")
    run = wait_run(owner, start_run(owner, message="hello admin")["id"], "paused")
    admin = get_user_model().objects.create_superuser("boss", "boss@example.com", "pw")
    client.force_login(admin)
    for page in PAGES:
        listing = client.get(f"/admin/{page}/")
        assert listing.status_code == 200, page
    detail = client.get(f"/admin/runs/agentrun/{run['id']}/change/")
    assert detail.status_code == 200
    assert b"paused" in detail.content and b"queued" in detail.content  # audit inline
    assert client.get("/admin/runs/agentrun/add/").status_code == 403
    conversation = client.get(f"/admin/runs/conversation/{run['thread_id']}/change/")
    assert b"hello admin" in conversation.content

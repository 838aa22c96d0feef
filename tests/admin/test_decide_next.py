""""Decide and next" follows the queue as the reviewer filtered it."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

QUEUE = "/admin/hitl/agentinterrupt/"


def test_decide_and_next_stays_within_the_filter(staff, paused_run):
    first = paused_run(staff["alice"], ["approval"], agent="approvals", age_minutes=50)[0]
    older_elsewhere = paused_run(staff["alice"], ["approval"], agent="showcase",
                                 age_minutes=500)[0]
    second = paused_run(staff["alice"], ["approval"], agent="approvals", age_minutes=40)[0]
    client = Client()
    client.force_login(staff["reviewer"])
    listing = client.get(QUEUE + "?agent=approvals")
    filters = quote("agent=approvals")
    assert f"{first.pk}/change/?_changelist_filters={filters}" in listing.content.decode()

    response = client.post(f"{QUEUE}{first.pk}/change/?_changelist_filters={filters}",
                           {"decision": "approve"})
    assert response.status_code == 302
    assert response["Location"].startswith(f"{QUEUE}{second.pk}/change/?")
    assert f"_changelist_filters={filters}" in response["Location"]

    last = client.post(response["Location"], {"decision": "approve"})
    # Nothing left under this filter (the older showcase one is not in it): back to the queue.
    assert last.status_code == 302 and last["Location"] == QUEUE + "?agent=approvals"
    older_elsewhere.refresh_from_db()
    assert older_elsewhere.status == "pending"


def test_back_to_the_queue_when_asked(staff, paused_run):
    first, second = paused_run(staff["alice"], ["approval", "approval"])
    client = Client()
    client.force_login(staff["reviewer"])
    response = client.post(f"{QUEUE}{first.pk}/change/?_after=queue", {"decision": "approve"})
    assert response["Location"] == QUEUE
    page = client.get(f"{QUEUE}{second.pk}/change/?_after=queue").content.decode()
    assert 'id="after-next"' in page

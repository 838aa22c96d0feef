"""The decide page of an answered tool call shows the arguments it ran with beside the
ones the agent asked for (issue 35, item 10), as it shows a review's edit."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from hitl.models import AgentInterrupt

pytestmark = pytest.mark.django_db

QUEUE = "/admin/hitl/agentinterrupt/"


def test_an_edited_tool_call_shows_both_argument_sets(staff, paused_run):
    row = paused_run(staff["alice"], ["approval"])[0]
    AgentInterrupt.objects.filter(pk=row.pk).update(
        kind="hitl_request", status="decided", decided_by=staff["reviewer"],
        decided_at=timezone.now(),
        request={"action_requests": [{"name": "send_email", "args": {"to": "alice@x.org"}},
                                     {"name": "delete_file", "args": {"path": "/a"}}],
                 "review_configs": []},
        decision={"decisions": [
            {"type": "edit", "edited_action": {"name": "send_email",
                                               "args": {"to": "bob@x.org"}}},
            {"type": "reject"}]})
    client = Client()
    client.force_login(staff["reviewer"])
    page = client.get(f"{QUEUE}{row.pk}/change/").content.decode()
    original = page.split('id="edit-original">')[1].split("</pre>")[0]
    edited = page.split('id="edit-edited">')[1].split("</pre>")[0]
    assert "alice@x.org" in original and "bob@x.org" in edited
    assert "send_email: the arguments it ran with" in page
    assert "delete_file: the arguments" not in page  # rejected: nothing ran

"""The approval queue's presence (issue 39): each open row says who is on it now, and the
"not being looked at" filter leaves out the questions someone has open (Redis, real)."""

from __future__ import annotations

import pytest
from django.test import Client

from hitl.presence import LEFT, VIEWING, presence_beat

pytestmark = pytest.mark.django_db

QUEUE = "/admin/hitl/agentinterrupt/"


def _rows(response) -> list[str]:
    return [str(obj.pk) for obj in response.context["cl"].result_list]


def test_the_queue_shows_who_is_on_a_row_and_filters_the_unwatched(staff, paused_run):
    watched, alone = paused_run(staff["alice"], ["approval", "approval"])
    reviewer = staff["reviewer"]
    client = Client()
    client.force_login(reviewer)
    presence_beat(user=staff["clerk"], run_id=watched.run_id, owner_id=watched.run.owner_id,
                  interrupt_id=watched.interrupt_id, state=VIEWING)
    try:
        page = client.get(QUEUE)
        assert "clerk is viewing this" in page.content.decode()
        assert set(_rows(client.get(QUEUE, {"presence": "none"}))) == {str(alone.pk)}
        assert set(_rows(client.get(QUEUE, {"presence": "some"}))) == {str(watched.pk)}
        assert "Not being looked at" in page.content.decode()
    finally:
        presence_beat(user=staff["clerk"], run_id=watched.run_id,
                      owner_id=watched.run.owner_id, interrupt_id=watched.interrupt_id,
                      state=LEFT)
    assert str(watched.pk) in _rows(client.get(QUEUE, {"presence": "none"}))

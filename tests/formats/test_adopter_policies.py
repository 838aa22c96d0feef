"""Policies apply to adopters' formats too: a standing tool approval answers a per-call
middleware interrupt as the middleware expects (the tool runs, nobody is asked)."""

from __future__ import annotations

import pytest

from hitl.models import StandingApproval
from tests.formats.test_adopter_agents import decide, paused, tools_ran
from tests.helpers import pending, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_standing_tool_approval_answers_a_per_call_interrupt(api, users):
    StandingApproval.objects.create(agent="adopter_per_call", kind="tool",
                                    tool_name="delete_file", granted_by=users["reviewer"])
    owner = api("owner")
    run = paused(owner, "adopter_per_call", message="email, delete")
    item = pending(run)  # only send_email is asked; delete_file was approved standing
    assert item["kind"] == "tool_approval" and item["request"]["name"] == "send_email"
    assert decide(owner, item, {"type": "reject", "message": "not now"}).status_code == 202
    done = wait_run(owner, run["id"], "completed")
    assert tools_ran(done["thread_id"]) == [{"name": "delete_file",
                                             "args": {"path": "/tmp/report"}}]

"""Each per-call question names its call on REST and AG-UI (issue 35 item 13), and REST
takes what the schema takes: an empty string is a string (forms treat an empty input of
a required field as missing; an API client says what it means)."""

from __future__ import annotations

import pytest

from tests.agui_client import interrupts, run_input, run_segment
from tests.formats.test_adopter_agents import decide, paused, tools_ran
from tests.helpers import wait_run

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "Approve send_email(to=alice@example.com, body=hi)"
DELETE = "Approve delete_file(path=/tmp/report): Deleting a file cannot be undone"


def test_per_call_messages_over_agui_and_rest(api):
    client = api("owner")
    body = run_input(messages=[{"id": "u1", "role": "user", "content": "go"}])
    found = interrupts(run_segment(client, "adopter_per_call", body))
    assert sorted(i["message"] for i in found) == [DELETE, EMAIL]
    # The raw value is untouched: the middleware's own description.
    email = next(i for i in found if i["metadata"]["name"] == "send_email")
    assert email["metadata"]["description"].startswith("Tool execution requires approval")
    listed = client.get("/api/interrupts/", params={"status": "pending"}).json()["results"]
    assert sorted(i["message"] for i in listed) == [DELETE, EMAIL]


def test_rest_follows_the_schema_for_empty_strings(api):
    owner = api("owner")
    run = paused(owner, "adopter_per_call")
    email = next(i for i in run["pending_interrupts"] if i["request"]["name"] == "send_email")
    missing = decide(owner, email, {"type": "edit", "edited_action": {
        "name": "send_email", "args": {"body": "hi"}}})
    assert missing.status_code == 400, missing.text
    empty = {"type": "edit", "edited_action": {"name": "send_email",
                                               "args": {"to": "", "body": "hi"}}}
    assert decide(owner, email, empty).status_code == 202
    delete = next(i for i in run["pending_interrupts"] if i["request"]["name"] == "delete_file")
    wait_run(owner, run["id"], {"paused", "completed"})
    assert decide(owner, delete, {"type": "approve"}).status_code == 202
    done = wait_run(owner, run["id"], "completed")
    assert {"name": "send_email", "args": {"to": "", "body": "hi"}} in tools_ran(
        done["thread_id"])

""""Verbatim" is verbatim: a value raised with its keys in no sorted order comes back in
the order the graph raised it, nested objects too, on REST (``request``, ``message``),
AG-UI (the interrupt's ``metadata``) and the model the admin renders from. The value's
column has no equality operator (``json``): the queries that filter through joins still
answer."""

from __future__ import annotations

import json

import pytest

from hitl.models import AgentInterrupt
from tests.accounts import make_superuser
from tests.adopter_agents import ORDERED
from tests.agui_client import post_events, run_input
from tests.helpers import pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def same_order(value) -> str:
    """The value as JSON text in its own key order (dict equality ignores order)."""
    return json.dumps(value)


def test_raised_key_order_is_kept_on_every_surface(api):
    owner = api("owner")
    run = wait_run(owner, start_run(owner, "adopter_odd", input={"which": "ordered"})["id"],
                   "paused")
    item = pending(run)
    assert list(ORDERED) == ["zeta", "a", "mm", "b"]  # not sorted, by name or length
    rest = owner.get(f"/api/interrupts/{item['id']}/")
    assert same_order(rest.json()["request"]) == same_order(ORDERED), rest.text
    assert rest.json()["message"].startswith('{"zeta": 1, "a": {"yy"'), rest.json()["message"]
    stored = AgentInterrupt.objects.get(pk=item["id"])
    assert same_order(stored.request) == same_order(ORDERED)
    events = post_events(owner, "/agui/adopter_odd/connect/", run_input(run["thread_id"]))
    (metadata,) = [i["metadata"] for i in events[-1]["outcome"]["interrupts"]]
    assert same_order(metadata) == same_order(ORDERED)


def test_lists_filtered_through_joins_still_answer(api, users, client):
    """The assignment filters (REST ``assigned_to=me``, the admin queue's "My groups")
    join many-to-many tables; over a json column they cannot use DISTINCT."""
    owner = api("owner")
    wait_run(owner, start_run(owner, "adopter_odd", input={"which": "ordered"})["id"], "paused")
    mine = owner.get("/api/interrupts/", params={"assigned_to": "me"})
    assert mine.status_code == 200 and mine.json()["results"] == [], mine.text
    client.force_login(make_superuser("boss"))
    for assigned in ("groups", "me", "none"):
        page = client.get("/admin/hitl/agentinterrupt/", {"assigned": assigned})
        assert page.status_code == 200, assigned

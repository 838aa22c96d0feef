"""Uploaded version plans: private to their owner, readable by the tasklist agent."""

from __future__ import annotations

import pytest

from tests.helpers import answer_and_wait, pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = """# v3.0 — Audiobooks

## Goal
Listen to audiobooks in the app.

## Scope
- Audio player (3d)
- Download for offline listening (2d)
"""


def test_upload_then_split_it(api):
    owner, outsider = api("owner"), api("outsider")
    response = owner.post("/api/documents/", json={"name": "v3.0.md", "content": PLAN})
    assert response.status_code == 201, response.text
    assert response.json()["ref"] == "docs://uploads/v3.0.md"
    again = owner.post("/api/documents/", json={"name": "v3.0.md", "content": PLAN + "\n"})
    assert again.status_code == 201 and again.json()["id"] == response.json()["id"]

    for bad in ({"name": "../x.md", "content": PLAN}, {"name": "plan.txt", "content": PLAN},
                {"name": "v.md", "content": "   "}, {"name": "v.md"}):
        r = owner.post("/api/documents/", json=bad)
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["fields"], r.json()
    assert [d["name"] for d in owner.get("/api/documents/").json()["results"]] == ["v3.0.md"]
    assert outsider.get("/api/documents/").json()["results"] == []

    run = start_run(owner, "tasklist", message="/tasklist @docs://uploads/v3.0.md")
    run = wait_run(owner, run["id"], "paused")
    assert pending(run)["request"]["message"] == "Review the split strategy for v3.0 — Audiobooks"
    run = answer_and_wait(owner, run, {"decision": "approve"})
    assert run["status"] == "completed", run
    assert [t["title"] for t in run["result"]["tasks"]] == [
        "Audio player", "Download for offline listening"]

    # Someone else's document is not readable by reference.
    theirs = start_run(outsider, "tasklist", input={"doc": "docs://uploads/v3.0.md"})
    theirs = wait_run(outsider, theirs["id"], "blocked")
    assert "was not uploaded by you" in theirs["error"]

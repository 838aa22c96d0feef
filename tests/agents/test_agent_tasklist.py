"""The tasklist agent (second seed) end to end: every branch of both reviews, through the
REST API, the real worker and the Postgres checkpointer, on the offline model."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, Message
from tests.agui_rules import validate_events
from tests.helpers import answer, answer_and_wait, pending, published_events, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

APPROVE = {"decision": "approve"}


def _start(client, doc: str, **body):
    run = start_run(client, "tasklist", input={"doc": f"docs://versions/{doc}"}, **body)
    return wait_run(client, run["id"], {"paused", "blocked", "completed", "failed"})


def _review_messages(run) -> str:
    return pending(run)["request"]["message"]


def _assistant_text(run) -> str:
    return Message.objects.get(pk=run["assistant_message_id"]).content


def test_approve_without_revision_completes_with_the_tasklist_in_the_message(api):
    client = api("owner")
    run = start_run(client, "tasklist", message="/tasklist @docs://versions/v1.0.md")
    run = wait_run(client, run["id"], "paused")
    review = pending(run)
    assert review["kind"] == "review"
    assert review["request"]["allowed"] == ["approve", "edit", "reject", "respond"]
    assert review["request"]["proposal"]["max_task_days"] == 3
    assert review["response_schema"]["properties"]["edited"]["required"] == [
        "approach", "max_task_days", "include_tests"]

    run = answer_and_wait(client, run, APPROVE)
    assert run["status"] == "completed", run  # no revision review: nothing needed fixing
    result = run["result"]
    assert result["revisions"] == 0 and result["open_issues"] == []
    assert [t["days"] for t in result["tasks"]] == [3, 1, 2]
    text = _assistant_text(run)
    assert result["markdown"] in text
    assert text.index("Proposed split strategy") < text.index("## Tasklist — v1.0")
    # One assistant message across the pause; its text streamed as AG-UI events.
    runs = validate_events(published_events(run["id"]))
    assert [r[-1]["outcome"]["type"] for r in runs] == ["interrupt", "success"]
    streamed = "".join(e["delta"] for r in runs for e in r if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert streamed == text
    assert AgentRun.objects.get(pk=run["id"]).messages.filter(role="assistant").count() == 1


def test_edit_is_validated_against_the_strategy_schema(api):
    client = api("owner")
    run = _start(client, "v1.1.md")
    proposal = pending(run)["request"]["proposal"]
    for bad in ({**proposal, "max_task_days": 99}, {**proposal, "approach": "random"},
                {**proposal, "surprise": 1}, {"approach": "by_feature"}):
        response = answer(client, run, {"decision": "edit", "edited": bad})
        assert response.status_code == 400, (bad, response.text)
        assert "edited" in response.json()["fields"], response.json()
    assert client.get(f"/api/runs/{run['id']}/").json()["status"] == "paused"

    # A cap of 5 days makes the 5-day task fit: no revision review.
    run = answer_and_wait(client, run, {"decision": "edit",
                                        "edited": {**proposal, "max_task_days": 5}})
    assert run["status"] == "completed", run
    assert run["result"]["strategy"]["max_task_days"] == 5
    assert run["result"]["revisions"] == 0
    assert "Strategy edited" in _assistant_text(run)


def test_reject_ends_the_run_rejected(api):
    client = api("owner")
    run = _start(client, "v1.0.md")
    run = answer_and_wait(client, run, {"decision": "reject", "reason": "wrong version"})
    assert run["status"] == "rejected"
    assert run["error"] == "wrong version"
    assert "strategy was rejected (wrong version)" in _assistant_text(run)


def test_respond_regenerates_the_strategy_and_reviews_again(api):
    client = api("owner")
    run = _start(client, "v1.0.md")
    first = pending(run)
    assert first["request"]["proposal"]["approach"] == "by_feature"
    run = answer_and_wait(client, run, {"decision": "respond",
                                        "feedback": "split by layer, and add tests"})
    second = pending(run)
    assert second["interrupt_id"] != first["interrupt_id"]
    assert second["request"]["proposal"]["approach"] == "by_layer"
    assert second["request"]["proposal"]["include_tests"] is True
    run = answer_and_wait(client, run, APPROVE)
    assert run["status"] == "completed", run
    titles = [t["title"] for t in run["result"]["tasks"]]
    assert "Reading list page with add and remove: backend" in titles
    assert "Import a list from CSV: tests" in titles


def test_insufficient_plan_is_blocked_with_the_reason(api):
    client = api("owner")
    run = _start(client, "ideas.md")
    assert run["status"] == "blocked", run
    assert "no '## Goal' section" in run["error"]
    assert "no '## Scope' list" in run["error"]
    assert run["pending_interrupts"] == []
    assert "Blocked:" in _assistant_text(run)

    missing = _start(client, "nope.md")
    assert missing["status"] == "blocked" and "does not exist" in missing["error"]


def _revision_rounds(client, doc: str) -> tuple[dict, list[str]]:
    """Approve every review; return the finished run and the revision review messages."""
    run = _start(client, doc)
    run = answer_and_wait(client, run, APPROVE)  # strategy
    revisions = []
    while run["status"] == "paused":
        revisions.append(_review_messages(run))
        run = answer_and_wait(client, run, APPROVE)
    return run, revisions


@pytest.mark.parametrize("doc, rounds", [("v1.0.md", 0), ("v1.1.md", 1), ("v1.2.md", 2)])
def test_revision_rounds_happen_only_when_needed(api, doc, rounds):
    run, revisions = _revision_rounds(api("owner"), doc)
    assert run["status"] == "completed", run
    assert len(revisions) == rounds
    for i, message in enumerate(revisions, 1):
        assert message.startswith(f"Revision {i} of at most 2")
    assert run["result"]["revisions"] == rounds
    assert run["result"]["open_issues"] == []
    assert all(t["days"] <= 3 for t in run["result"]["tasks"])


def test_never_a_third_revision_round(api):
    run, revisions = _revision_rounds(api("owner"), "v2.0.md")
    assert len(revisions) == 2
    assert run["status"] == "completed"
    assert run["result"]["revisions"] == 2
    # Still too big after two rounds: listed as open issues, not revised a third time.
    assert len(run["result"]["open_issues"]) == 4
    assert "Open issues (not fixed after 2 revision rounds)" in run["result"]["markdown"]
    db_run = AgentRun.objects.get(pk=run["id"])
    assert db_run.interrupts.count() == 3  # strategy + two revision reviews


def test_revision_review_edit_takes_over_the_draft_and_reject_stops(api):
    client = api("owner")
    run = answer_and_wait(client, _start(client, "v1.1.md"), APPROVE)
    tasks = pending(run)["request"]["proposal"]["tasks"]
    bad = answer(client, run, {"decision": "edit", "edited": {"tasks": [{"title": "x"}]}})
    assert bad.status_code == 400
    mine = [{"title": "Goal", "days": 2, "feature": tasks[0]["feature"]},
            {"title": "Chart A", "days": 3, "feature": tasks[1]["feature"]},
            {"title": "Chart B", "days": 2, "feature": tasks[1]["feature"]}]
    run = answer_and_wait(client, run, {"decision": "edit", "edited": {"tasks": mine}})
    assert run["status"] == "completed", run
    assert run["result"]["tasks"] == mine and run["result"]["revisions"] == 1

    run = answer_and_wait(client, _start(client, "v1.1.md"), APPROVE)
    run = answer_and_wait(client, run, {"decision": "reject", "reason": "I'll do it myself"})
    assert run["status"] == "rejected" and run["error"] == "I'll do it myself"


def test_invalid_doc_reference_is_a_400(api):
    client = api("owner")
    response = client.post("/api/runs/", json={"agent": "tasklist",
                                               "input": {"doc": "file:///etc/passwd"}})
    assert response.status_code == 400
    assert "input" in response.json()["fields"]

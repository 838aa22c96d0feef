"""Model and tool calls per node, counted in the real worker across pause and resume.

The ``*_counted`` agents (tests/counting_agents.py) are the shipped graphs compiled with a
callback handler that logs node start / end / interrupt, chat model calls and tool calls
to Redis. The log shows that a review node calls no model and no tool before it
interrupts, that the checkpoint holds nothing from it but the interrupt, and that a
resume re-enters only the interrupted node: nothing before it runs twice.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
import redis
from django.conf import settings
from django.db import connection

from tests.helpers import answer_and_wait, counter_expires_with_events, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

APPROVE = {"decision": "approve"}


def _log(thread_id: str) -> list[tuple[str, str, str]]:
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    return [(e["event"], e["node"], e["name"]) for e in
            map(json.loads, r.lrange(f"calls:{thread_id}", 0, -1))]


def _segment(events: list[tuple[str, str, str]]) -> list[str]:
    """Compact form: 'node>' start, '<node' end, '!node' interrupt, 'model@node', 'tool:x@node'."""
    out = []
    for event, node, name in events:
        out.append({"node_start": f"{node}>", "node_end": f"<{node}",
                    "node_interrupt": f"!{node}", "node_error": f"ERROR {node}",
                    "model": f"model@{node}", "tool": f"tool:{name}@{node}"}[event])
    return out


def _pending_writes(thread_id: str) -> list[str]:
    """Channels written for the newest checkpoint of the thread (the paused step)."""
    with connection.cursor() as cur:
        cur.execute("""SELECT channel FROM checkpoint_writes WHERE thread_id = %s AND
                       checkpoint_id = (SELECT max(checkpoint_id) FROM checkpoints
                                        WHERE thread_id = %s AND checkpoint_ns = '')
                       ORDER BY task_id, idx""", [thread_id, thread_id])
        return [row[0] for row in cur.fetchall()]


def test_tasklist_review_nodes_call_nothing_and_nothing_runs_twice(api):
    client = api("owner")
    run = start_run(client, "tasklist_counted", input={"doc": "docs://versions/v1.1.md"})
    thread = run["thread_id"]
    segments: list[list[str]] = []
    seen = 0

    def cut() -> None:
        nonlocal seen
        log = _log(thread)
        segments.append(_segment(log[seen:]))
        seen = len(log)

    run = wait_run(client, run["id"], "paused")
    cut()
    assert _pending_writes(thread) == ["__interrupt__"]  # the review node wrote nothing
    run = answer_and_wait(client, run, {"decision": "respond", "feedback": "5 days max"})
    cut()
    assert _pending_writes(thread) == ["__interrupt__"]
    run = answer_and_wait(client, run, {"decision": "edit", "edited": {
        **run["pending_interrupts"][0]["request"]["proposal"], "max_task_days": 3}})
    cut()
    assert _pending_writes(thread) == ["__interrupt__"]
    run = answer_and_wait(client, run, APPROVE)
    cut()
    assert run["status"] == "completed", run
    assert counter_expires_with_events(run["id"])  # its event counter goes with its events

    assert segments == [
        ["read_plan>", "tool:read_version_plan@read_plan", "<read_plan",
         "judge_plan>", "<judge_plan",
         "decide_strategy>", "model@decide_strategy", "<decide_strategy",
         "strategy_review>", "!strategy_review"],
        # respond: the review node re-enters, turns the answer into state, a new strategy.
        ["strategy_review>", "<strategy_review",
         "decide_strategy>", "model@decide_strategy", "<decide_strategy",
         "strategy_review>", "!strategy_review"],
        # edit (cap back to 3 days): draft, validation finds the 5-day task, revision review.
        ["strategy_review>", "<strategy_review",
         "generate_draft>", "model@generate_draft", "<generate_draft",
         "validate_draft>", "<validate_draft",
         "revision_review>", "!revision_review"],
        ["revision_review>", "<revision_review",
         "revise_draft>", "model@revise_draft", "<revise_draft",
         "validate_draft>", "<validate_draft",
         "finalize>", "<finalize"],
    ]
    log = _log(thread)
    models = Counter(node for event, node, _ in log if event == "model")
    tools = Counter(node for event, node, _ in log if event == "tool")
    assert models == {"decide_strategy": 2, "generate_draft": 1, "revise_draft": 1}
    assert tools == {"read_plan": 1}
    # Each review node: entered once to ask and once per answer, never anything in between.
    for review in ("strategy_review", "revision_review"):
        entries = [i for i, (event, node, _) in enumerate(log)
                   if event == "node_start" and node == review]
        for i in entries:
            assert log[i + 1][0] in {"node_interrupt", "node_end"}, log[i:i + 2]


def test_tool_approval_node_runs_nothing_before_the_decision(api):
    from workspace.models import Ticket

    client = api("owner")
    run = start_run(client, "assistant_counted", message="Please file a ticket about login")
    thread = run["thread_id"]
    run = wait_run(client, run["id"], "paused")
    first = _segment(_log(thread))
    assert first == ["agent>", "model@agent", "<agent", "approve_tools>", "!approve_tools"]
    assert _pending_writes(thread) == ["__interrupt__"]
    assert not Ticket.objects.filter(thread_id=thread).exists()

    run = answer_and_wait(client, run, APPROVE)
    assert run["status"] == "completed", run
    assert _segment(_log(thread))[len(first):] == [
        "approve_tools>", "<approve_tools",
        "tools>", "tool:file_ticket@tools", "<tools",
        "agent>", "model@agent", "<agent", "finish>", "<finish"]
    assert Ticket.objects.filter(thread_id=thread).count() == 1


def test_ask_tool_is_the_only_thing_re_entered_on_resume(api):
    # An ask tool is the review itself: LangGraph re-runs its node, and the tool returns
    # the answer instead of asking; the model call before it is not repeated.
    client = api("owner")
    run = start_run(client, "assistant_counted", message="How do I reset?")
    thread = run["thread_id"]
    run = wait_run(client, run["id"], "paused")
    first = _segment(_log(thread))
    assert first == ["agent>", "model@agent", "<agent",
                     "tools>", "tool:ask_choice@tools", "!tools"]
    run = answer_and_wait(client, run, {"value": "Password reset"})
    assert run["status"] == "completed", run
    assert _segment(_log(thread))[len(first):] == [
        "tools>", "tool:ask_choice@tools", "<tools",
        "agent>", "model@agent", "<agent",
        "tools>", "tool:kb_search@tools", "<tools",
        "agent>", "model@agent", "<agent", "finish>", "<finish"]


def test_rejected_tool_call_is_never_started(api):
    from workspace.models import Ticket

    client = api("owner")
    run = start_run(client, "assistant_counted", message="Please file a ticket about login")
    run = wait_run(client, run["id"], "paused")
    run = answer_and_wait(client, run, {"decision": "reject", "reason": "not needed"})
    assert run["status"] == "completed", run
    log = _segment(_log(run["thread_id"]))
    assert log == ["agent>", "model@agent", "<agent", "approve_tools>", "!approve_tools",
                   "approve_tools>", "<approve_tools", "tools>", "<tools",
                   "agent>", "model@agent", "<agent", "finish>", "<finish"]
    assert not any(entry.startswith("tool:") for entry in log)  # file_ticket never started
    assert not Ticket.objects.filter(thread_id=run["thread_id"]).exists()

"""/metrics counts a scripted REST run's events exactly, across the web process (runs
started, interrupts decided) and the worker (interrupts opened, segments, model calls,
runs ended): read before and after, parsed with prometheus-client's own text parser."""

from __future__ import annotations

import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import answer_and_wait, pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def samples(client) -> dict[tuple[str, frozenset], float]:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.text)
            for s in family.samples}


# Gauges of state (read from the database and broker), and sums: not counts of events.
NOT_COUNTS = ("agentsite_interrupts_pending", "agentsite_interrupts_overdue",
              "agentsite_celery_queue_depth", "agentsite_open_streams")


def counts(changes: dict) -> dict:
    return {k: v for k, v in changes.items()
            if not k[0].endswith("_sum") and not k[0].startswith(NOT_COUNTS)}


def moved(before: dict, after: dict) -> dict[tuple[str, frozenset], float]:
    """Every sample that changed, by how much (histogram buckets left out)."""
    return {key: after[key] - before.get(key, 0) for key in after
            if not key[0].endswith("_bucket") and after[key] != before.get(key, 0)
            and not key[0].endswith("_created")}


def key(name: str, **labels: str) -> tuple[str, frozenset]:
    return name, frozenset(labels.items())


def settled(client, expected: dict) -> dict:
    """The worker's last counts land after the run's status does (on commit): poll."""
    deadline = time.monotonic() + 30
    while True:
        now = samples(client)
        if all(now.get(k, 0) >= v for k, v in expected.items()) or time.monotonic() > deadline:
            return now
        time.sleep(0.05)


def quiet(client) -> dict:
    """The samples once nothing moves any more: a notification task of an earlier test's
    run may still be on its way."""
    deadline = time.monotonic() + 10
    last = samples(client)
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = samples(client)
        if not counts(moved(last, now)):
            return now
        last = now
    return last


def test_a_dev_run_and_an_adopter_run_move_each_counter_by_what_they_did(api):
    client, reader = api("owner"), api("reviewer")
    before = quiet(reader)

    run = wait_run(client, start_run(client, input={"topic": "metrics"})["id"], "paused")
    for payload in ({"value": "Apollo"}, {"value": "green"}, {"values": ["metrics"]},
                    {"approved": True}):
        run = answer_and_wait(client, run, payload)
    assert run["status"] == "completed", run

    batched = wait_run(client, start_run(client, "adopter_batched", message="go")["id"],
                       "paused")
    assert pending(batched)["kind"] == "hitl_request"
    batched = answer_and_wait(client, batched, {"decisions": [{"type": "approve"},
                                                              {"type": "reject"}]})
    assert batched["status"] == "completed", batched

    dev, adopter = {"agent": "dev"}, {"agent": "adopter_batched"}
    expected = {
        key("agentsite_runs_started_total", **dev): 1,
        key("agentsite_runs_started_total", **adopter): 1,
        key("agentsite_runs_ended_total", outcome="completed", **dev): 1,
        key("agentsite_runs_ended_total", outcome="completed", **adopter): 1,
        **{key("agentsite_interrupts_opened_total", format=kind, **dev): 1
           for kind in ("input", "select", "multiSelect", "approval")},
        key("agentsite_interrupts_opened_total", format="hitl_request", **adopter): 1,
        **{key("agentsite_interrupts_decided_total", format=kind, surface="api",
               outcome="decided", **dev): 1
           for kind in ("input", "select", "multiSelect", "approval")},
        key("agentsite_interrupts_decided_total", format="hitl_request", surface="api",
            outcome="decided", **adopter): 1,
        **{key("agentsite_time_to_decision_seconds_count", format=kind, **dev): 1
           for kind in ("input", "select", "multiSelect", "approval")},
        key("agentsite_time_to_decision_seconds_count", format="hitl_request", **adopter): 1,
        # Five segments of the dev run (four pauses and the end), two of the adopter's.
        key("agentsite_segment_duration_seconds_count", **dev): 5,
        key("agentsite_segment_duration_seconds_count", **adopter): 2,
        key("agentsite_segment_queue_wait_seconds_count", **dev): 5,
        key("agentsite_segment_queue_wait_seconds_count", **adopter): 2,
        # The adopter's scripted model: asked for the tools, then for the last word.
        key("agentsite_model_calls_total", model="ScriptedChatModel"): 2,
        # The owner is told by email of each question (5) and of each run's end (2).
        key("agentsite_notifications_total", channel="email", outcome="delivered"): 7,
    }
    after = settled(reader, expected)
    changes = moved(before, after)
    assert counts(changes) == expected
    # The times are real: each decision took some time, no wait was negative.
    assert changes[key("agentsite_time_to_decision_seconds_sum", format="input", **dev)] > 0
    assert after[key("agentsite_celery_queue_depth", queue=api_queue())] >= 0


def api_queue() -> str:
    from tests.conftest import QUEUE

    return QUEUE

"""useStream's engine (``StreamOrchestrator`` of ``@langchain/langgraph-sdk/ui``: what the
React hook, and Agent Chat UI with it, runs on) in Node against /lg, on the `dev` agent:
tests/node/lg_use_stream.test.mjs (a conversation; a message sent while the agent works,
which useStream queues with ``multitask_strategy="enqueue"``). The same rows and audit as
every other door."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, AuditLog
from tests.agui.test_agui_node import node_test

pytestmark = pytest.mark.django_db(transaction=True)


def test_use_stream_flow(live, users):
    node_test(live["base_url"], users["owner_token"], "lg_use_stream.test.mjs")
    # The conversation, then the first run of the queue test answered to its end and the
    # run queued behind it at its first question.
    runs = list(AgentRun.objects.order_by("created_at"))
    assert [r.status for r in runs] == ["completed", "completed", "paused"]
    assert runs[0].stream_modes == ["values", "updates", "messages-tuple"]
    assert AuditLog.objects.get(run=runs[2], to_status="waiting").payload[
        "behind_run"] == str(runs[1].id)
    assert set(AuditLog.objects.filter(action="decision").values_list(
        "surface", flat=True)) == {"langgraph"}

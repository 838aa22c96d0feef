"""useStream's engine (``StreamOrchestrator`` of ``@langchain/langgraph-sdk/ui``: what the
React hook, and Agent Chat UI with it, runs on) in Node against /lg, on the `dev` agent:
tests/node/lg_use_stream.test.mjs (a conversation; a message sent while the agent works,
which useStream queues with ``multitask_strategy="enqueue"``). The same rows and audit as
every other door."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from runs.models import AgentRun, AuditLog
from tests.agui.test_agui_node import NODE_DIR, _npm_ci

pytestmark = pytest.mark.django_db(transaction=True)


def test_use_stream_flow(live, users):
    assert shutil.which("node") and shutil.which("npm"), "node and npm must be on PATH"
    _npm_ci()
    done = subprocess.run(
        ["node", "--test", "--test-reporter=spec", "lg_use_stream.test.mjs"], cwd=NODE_DIR,
        env={"PATH": os.environ["PATH"], "AGENTSITE_URL": live["base_url"],
             "AGENTSITE_TOKEN": users["owner_token"]},
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"node tests failed:\n{done.stdout}\n{done.stderr}"
    # The conversation, then the first run of the queue test answered to its end and the
    # run queued behind it at its first question.
    runs = list(AgentRun.objects.order_by("created_at"))
    assert [r.status for r in runs] == ["completed", "completed", "paused"]
    assert runs[0].stream_modes == ["values", "updates", "messages-tuple"]
    assert AuditLog.objects.get(run=runs[2], to_status="waiting").payload[
        "behind_run"] == str(runs[1].id)
    assert set(AuditLog.objects.filter(action="decision").values_list(
        "surface", flat=True)) == {"langgraph"}

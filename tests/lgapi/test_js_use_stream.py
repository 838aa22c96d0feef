"""useStream's engine (``StreamOrchestrator`` of ``@langchain/langgraph-sdk/ui``: what the
React hook, and Agent Chat UI with it, runs on) in Node against /lg, on the `dev` agent:
tests/node/lg_use_stream.test.mjs. The same rows and audit as every other door."""

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
    (run,) = AgentRun.objects.all()
    assert (run.agent, run.status, run.stream_modes) == (
        "dev", "completed", ["values", "updates", "messages-tuple"])
    assert list(AuditLog.objects.filter(action="decision").values_list(
        "surface", flat=True)) == ["langgraph"] * 4

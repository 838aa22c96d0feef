"""LangGraph's JS client (@langchain/langgraph-sdk Client, Node, pinned in tests/node/
package-lock.json) drives the `dev` agent through /lg: tests/node/lg_dev.test.mjs."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from runs.models import AgentRun, AuditLog
from tests.agui.test_agui_node import NODE_DIR, _npm_ci

pytestmark = pytest.mark.django_db(transaction=True)


def test_js_client_drives_dev_agent(live, users):
    assert shutil.which("node") and shutil.which("npm"), "node and npm must be on PATH"
    _npm_ci()
    done = subprocess.run(
        ["node", "--test", "--test-reporter=spec", "lg_dev.test.mjs"], cwd=NODE_DIR,
        env={"PATH": os.environ["PATH"], "AGENTSITE_URL": live["base_url"],
             "AGENTSITE_TOKEN": users["owner_token"]},
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"node tests failed:\n{done.stdout}\n{done.stderr}"
    assert sorted(AgentRun.objects.values_list("status", flat=True)) == ["cancelled",
                                                                         "completed"]
    assert set(AuditLog.objects.filter(action="decision").values_list(
        "surface", flat=True)) == {"langgraph"}

"""The official AG-UI client (@ag-ui/client HttpAgent) through Pushpin.

AG-UI streams stay direct (docs/scaling.md, "AG-UI"): Pushpin passes the run / resume /
connect POSTs and their event-stream answers through to a web process unchanged, and the
same conformance suites as tests/agui/test_agui_node.py pass through it.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from runs.models import AgentRun
from tests.agui.test_agui_node import NODE_DIR, _npm_ci, adopter_runs_completed, node_test

pytestmark = pytest.mark.django_db(transaction=True)


def test_official_client_through_pushpin(edge, live, users):
    assert shutil.which("node") and shutil.which("npm"), "node and npm must be on PATH"
    _npm_ci()
    done = subprocess.run(
        ["node", "--test", "--test-reporter=spec", "agui_dev.test.mjs"], cwd=NODE_DIR,
        env={"PATH": os.environ["PATH"], "AGENTSITE_URL": edge["base_url"],
             "AGENTSITE_TOKEN": users["owner_token"]},
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"node tests failed:\n{done.stdout}\n{done.stderr}"
    assert "fail 0" in done.stdout, done.stdout
    statuses = sorted(AgentRun.objects.values_list("status", flat=True))
    assert statuses == ["cancelled", "completed", "paused"], statuses


def test_official_client_runs_adopter_agents_through_pushpin(edge, live, users):
    """Parallel tool calls (create_agent + HumanInTheLoopMiddleware: batched, per call,
    approve-only) through Pushpin, to the end with no client error."""
    node_test(edge["base_url"], users["owner_token"], "agui_adopters.test.mjs")
    adopter_runs_completed()

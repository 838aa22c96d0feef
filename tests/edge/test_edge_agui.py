"""The official AG-UI client (@ag-ui/client HttpAgent) through Pushpin.

AG-UI streams stay direct (docs/scaling.md, "AG-UI"): Pushpin passes the run / resume /
connect POSTs and their event-stream answers through to a web process unchanged, and the
same conformance suite as tests/agui/test_agui_node.py passes through it.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from runs.models import AgentRun
from tests.agui.test_agui_node import NODE_DIR, _npm_ci

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

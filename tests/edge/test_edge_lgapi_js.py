"""LangGraph's JS client (@langchain/langgraph-sdk Client in Node: tests/node/lg_dev.test.mjs)
through Pushpin, its streams held by the proxy (lgapi.hold): the same flow as direct
(tests/lgapi/test_js_client.py)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from runs.models import AgentRun
from tests.agui.test_agui_node import NODE_DIR, _npm_ci

pytestmark = pytest.mark.django_db(transaction=True)


def test_js_client_through_pushpin(edge, live, users):
    assert shutil.which("node") and shutil.which("npm"), "node and npm must be on PATH"
    _npm_ci()
    done = subprocess.run(
        ["node", "--test", "--test-reporter=spec", "lg_dev.test.mjs"], cwd=NODE_DIR,
        env={"PATH": os.environ["PATH"], "AGENTSITE_URL": edge["base_url"],
             "AGENTSITE_TOKEN": users["owner_token"]},
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"node tests failed:\n{done.stdout}\n{done.stderr}"
    assert sorted(AgentRun.objects.values_list("status", flat=True)) == ["cancelled",
                                                                         "completed"]

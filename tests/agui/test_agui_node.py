"""The official AG-UI client (@ag-ui/client HttpAgent, Node, pinned in tests/node/
package-lock.json) drives the `dev` agent on the live server: tests/node/*.test.mjs."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runs.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)

NODE_DIR = Path(__file__).resolve().parent.parent / "node"


def _npm_ci() -> None:
    """`npm ci` from the lockfile, once per lockfile content."""
    lock = (NODE_DIR / "package-lock.json").read_bytes()
    stamp = NODE_DIR / "node_modules" / ".agentsite-lock-sha256"
    digest = hashlib.sha256(lock).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return
    done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
    stamp.write_text(digest)


def test_official_client_drives_dev_agent(live, users):
    assert shutil.which("node") and shutil.which("npm"), "node and npm must be on PATH"
    _npm_ci()
    done = subprocess.run(
        ["node", "--test", "--test-reporter=spec", "agui_dev.test.mjs"], cwd=NODE_DIR,
        env={"PATH": os.environ["PATH"], "AGENTSITE_URL": live["base_url"],
             "AGENTSITE_TOKEN": users["owner_token"]},
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"node tests failed:\n{done.stdout}\n{done.stderr}"
    assert "# fail 0" in done.stdout or "fail 0" in done.stdout, done.stdout
    # The server side agrees: one completed, one cancelled, one still paused.
    statuses = sorted(AgentRun.objects.values_list("status", flat=True))
    assert statuses == ["cancelled", "completed", "paused"], statuses

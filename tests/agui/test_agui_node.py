"""The official AG-UI client (@ag-ui/client HttpAgent, Node, pinned in tests/node/
package-lock.json) drives agents on the live server: tests/node/*.test.mjs. The `dev`
agent, and the adopter agents (create_agent + HumanInTheLoopMiddleware: batched, per call,
approve-only), whose approved tool calls run at once."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runs.models import AgentRun
from tests.formats.test_adopter_agents import tools_ran

pytestmark = pytest.mark.django_db(transaction=True)

NODE_DIR = Path(__file__).resolve().parent.parent / "node"


def _npm_ci() -> None:
    """`npm ci` from the lockfile, once per lockfile content. The parallel test processes
    share tests/node: one installs under a file lock, the others wait and find it done."""
    lock = (NODE_DIR / "package-lock.json").read_bytes()
    stamp = NODE_DIR / "node_modules" / ".agentsite-lock-sha256"
    digest = hashlib.sha256(lock).hexdigest()
    with open(NODE_DIR / ".npm-ci.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == digest:
            return
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
        stamp.write_text(digest)


def node_test(base_url: str, token: str, script: str) -> None:
    """Run one tests/node script against ``base_url``; every test in it must pass."""
    assert shutil.which("node") and shutil.which("npm"), "node and npm must be on PATH"
    _npm_ci()
    done = subprocess.run(
        ["node", "--test", "--test-reporter=spec", script], cwd=NODE_DIR,
        env={"PATH": os.environ["PATH"], "AGENTSITE_URL": base_url, "AGENTSITE_TOKEN": token},
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"node tests failed:\n{done.stdout}\n{done.stderr}"
    assert "# fail 0" in done.stdout or "fail 0" in done.stdout, done.stdout


def test_official_client_drives_dev_agent(live, users):
    node_test(live["base_url"], users["owner_token"], "agui_dev.test.mjs")
    # The server side agrees: one completed, one cancelled, one still paused.
    statuses = sorted(AgentRun.objects.values_list("status", flat=True))
    assert statuses == ["cancelled", "completed", "paused"], statuses


def test_official_client_drives_adopter_agents_with_parallel_tools(live, users):
    node_test(live["base_url"], users["owner_token"], "agui_adopters.test.mjs")
    adopter_runs_completed()


def adopter_runs_completed() -> None:
    """What agui_adopters.test.mjs leaves on the server: each agent's run completed, and
    both tools ran once on each thread."""
    runs = list(AgentRun.objects.values_list("agent", "status").order_by("agent"))
    assert runs == [("adopter_approve_only", "completed"), ("adopter_batched", "completed"),
                    ("adopter_per_call", "completed")], runs
    for thread in AgentRun.objects.values_list("thread_id", flat=True):
        assert sorted(t["name"] for t in tools_ran(str(thread))) == ["delete_file",
                                                                      "send_email"]

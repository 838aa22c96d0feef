"""Our browser SSE helper (static/agentsite/events.js) under Node's test runner."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_events_js_drops_duplicates_and_refetches_gaps():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    done = subprocess.run([node, "--test", str(ROOT / "tests" / "js" / "events_client.test.js")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr

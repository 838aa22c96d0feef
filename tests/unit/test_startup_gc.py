"""What the web, worker and edge forwarder processes loaded at startup is frozen out of
full collections (agentsite/startup_gc.py), and garbage made later is still collected."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_web_process_freezes_its_startup_objects():
    out = _run("import gc\nbefore = gc.get_freeze_count()\nimport agentsite.asgi\n"
               "print(before, gc.get_freeze_count())")
    before, after = map(int, out.split())
    # Django, DRF, pydantic, the checkpointer (no graph code): well over 50,000 objects.
    assert before == 0 and after > 50_000, out


_WORKER = (
    "import gc\nimport django\ndjango.setup()\nfrom agentsite.celery import app\n"
    "from agentsite import heartbeat\nfrom execution import tasks\n"
    "from celery.signals import worker_process_init, worker_ready\n"
    # Only the freeze: no heartbeat or reaper thread from this test process.
    "worker_ready.disconnect(heartbeat._start)\n"
    "worker_ready.disconnect(tasks._start_reaper)\n"
    "print(gc.get_freeze_count())\n"
    "{signal}.send(sender=None)\n"
    "print(gc.get_freeze_count())\n"
    "class Cycle:\n    pass\n"
    "a, b = Cycle(), Cycle()\na.other, b.other = b, a\ndel a, b\n"
    "print(gc.collect())\n")


def test_a_worker_freezes_when_ready_and_in_each_forked_child():
    for signal in ("worker_ready", "worker_process_init"):
        out = _run(_WORKER.format(signal=signal))
        before, after, collected = map(int, out.split())
        assert before == 0 and after > 50_000, (signal, out)
        assert collected >= 2, (signal, out)  # made after the freeze: still collected


def test_the_edge_forwarder_freezes_its_startup_objects():
    out = _run("import gc\nimport django\ndjango.setup()\nbefore = gc.get_freeze_count()\n"
               "from streams.edge import freeze_startup\nfreeze_startup()\n"
               "print(before, gc.get_freeze_count())")
    before, after = map(int, out.split())
    assert before == 0 and after > 50_000, out

"""Importing settings starts nothing: with a URL missing it fails loudly, naming the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
        "'agentsite.settings'); django.setup()")


@pytest.mark.parametrize("given", [{}, {"DATABASE_URL": "postgresql://u@db.example/app"},
                                   {"REDIS_URL": "redis://cache.example/0"}])
def test_settings_without_urls_start_nothing_and_say_why(tmp_path: Path, given: dict) -> None:
    data_dir = tmp_path / "data"  # where embedded servers would keep their data and ports
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "AGENTSITE_EMBEDDED")}
    env.update(given, AGENTSITE_DATA_DIR=str(data_dir))
    result = subprocess.run([sys.executable, "-c", CODE], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured"), result.stderr
    missing = [name for name in ("DATABASE_URL", "REDIS_URL") if name not in given]
    assert all(name in last for name in missing) and "make run" in last, last
    assert not data_dir.exists(), "settings started (or prepared) an embedded server"


def test_ensure_env_fills_only_the_missing_url() -> None:
    # What the launcher, manage.py and the test plugin call before settings load.
    from agentsite import embedded

    given = {"DATABASE_URL": "postgresql://u@db.example/app", "REDIS_URL": "redis://x/0"}
    assert embedded.ensure_env(given) == [] and "AGENTSITE_EMBEDDED" not in given
    if os.environ.get("AGENTSITE_EMBEDDED") != "1":
        pytest.skip("this run is not on the embedded servers")
    one = {"DATABASE_URL": "postgresql://u@db.example/app"}
    assert embedded.ensure_env(one) == ["redis"]  # found running: this run's own
    assert one["REDIS_URL"] == os.environ["REDIS_URL"] and "AGENTSITE_EMBEDDED" not in one

"""The insecure built-in SECRET_KEY serves only the all-embedded local default or DEBUG."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
REAL_DB, REAL_REDIS = "postgresql://u@db.example/app", "redis://cache.example/0"


def _secret_key(**env: str | None) -> subprocess.CompletedProcess:
    """Load settings in a fresh process with `env` (None removes a variable)."""
    full = {k: v for k, v in {**os.environ, "SECRET_KEY": None, "DEBUG": None, **env}.items()
            if v is not None}
    return subprocess.run(
        [sys.executable, "-c", "import django, os; os.environ.setdefault("
         "'DJANGO_SETTINGS_MODULE', 'agentsite.settings'); django.setup(); "
         "from django.conf import settings; print(settings.SECRET_KEY)"],
        env=full, cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("env", [
    # The flag does not make a real database embedded.
    {"DATABASE_URL": REAL_DB, "REDIS_URL": REAL_REDIS, "AGENTSITE_EMBEDDED": "1"},
    # (A missing URL fails before the key: tests/unit/test_settings_start_nothing.py.)
    {"DATABASE_URL": REAL_DB, "REDIS_URL": REAL_REDIS, "DEBUG": "false"},
])
def test_a_real_service_needs_a_real_key(env):
    result = _secret_key(**env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "SECRET_KEY" in result.stderr, result.stderr


def test_debug_or_the_embedded_default_may_use_the_local_key():
    with_debug = _secret_key(DATABASE_URL=REAL_DB, REDIS_URL=REAL_REDIS, DEBUG="true")
    assert with_debug.returncode == 0, with_debug.stderr
    assert with_debug.stdout.strip() == "agentsite-insecure-local-key"
    # A child of the local default (`make run`, the test servers): URLs of the embedded servers.
    db = settings.DATABASES["default"]
    child = _secret_key(DATABASE_URL=f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/x",
                        REDIS_URL=settings.REDIS_URL, AGENTSITE_EMBEDDED="1")
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "agentsite-insecure-local-key"
    given = _secret_key(DATABASE_URL=REAL_DB, REDIS_URL=REAL_REDIS, SECRET_KEY="s3cret")
    assert given.returncode == 0 and given.stdout.strip() == "s3cret", given.stderr

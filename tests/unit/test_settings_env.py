"""Configuration comes from the environment and fails loudly on bad values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from agentsite.env import env_bool, env_int, env_seconds, parse_database_url, redis_kwargs

ROOT = Path(__file__).resolve().parents[2]


def _settings_with(**env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", "import django, os; os.environ.setdefault("
         "'DJANGO_SETTINGS_MODULE', 'agentsite.settings'); django.setup()"],
        env=full, cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("env,message", [
    ({"DATABASE_URL": "mysql://u@h/db", "REDIS_URL": "redis://localhost/0"}, "postgres"),
    ({"DATABASE_URL": "postgresql://u@h/", "REDIS_URL": "redis://localhost/0"}, "no database name"),
    ({"DATABASE_URL": "postgresql://u@h:port/db", "REDIS_URL": "redis://x/0"}, "invalid port"),
    ({"DATABASE_URL": "postgresql://u@h/db", "REDIS_URL": "http://x"}, "REDIS_URL"),
    ({"DATABASE_URL": "postgresql://u@h/db", "REDIS_URL": "redis://x/0", "DEBUG": "maybe"},
     "DEBUG"),
    ({"DATABASE_URL": "postgresql://u@h/db", "REDIS_URL": "redis://x/0", "DEBUG": "false",
      "AGENTSITE_EMBEDDED": "0", "SECRET_KEY": ""}, "SECRET_KEY"),
])
def test_bad_settings_fail_loudly(env, message):
    result = _settings_with(**env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr, result.stderr


def test_parsers():
    db = parse_database_url("postgresql://al%40x:p%2Fw@db.example:6543/app?sslmode=require")
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "al@x", "p/w", "db.example", "6543", "app")
    assert db["OPTIONS"] == {"sslmode": "require"}
    assert redis_kwargs("rediss://:secret@cache:6380/3") == {
        "host": "cache", "port": 6380, "db": 3, "password": "secret", "ssl": True}
    with pytest.raises(ImproperlyConfigured):
        redis_kwargs("redis://cache/abc")
    os.environ["AGENTSITE_T_INT"] = "12x"
    with pytest.raises(ImproperlyConfigured, match="AGENTSITE_T_INT"):
        env_int("AGENTSITE_T_INT", 1)
    os.environ["AGENTSITE_T_BOOL"] = "YES"
    assert env_bool("AGENTSITE_T_BOOL", False) is True


@pytest.mark.parametrize(("value", "expected"), [("2.5", 2.5), ("", 7.0), ("abc", None),
                                                 ("0", None), ("-1", None), ("nan", None)])
def test_seconds(monkeypatch, value, expected):
    monkeypatch.setenv("AGENTSITE_T_SECONDS", value)
    if expected is None:
        with pytest.raises(ImproperlyConfigured, match="AGENTSITE_T_SECONDS"):
            env_seconds("AGENTSITE_T_SECONDS", 7.0)
    else:
        assert env_seconds("AGENTSITE_T_SECONDS", 7.0) == expected

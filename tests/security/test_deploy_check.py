"""``manage.py check --deploy`` is clean in the production environment: docker-compose.yml's
settings for the web processes, with what an operator must set (a real key, the host, the
https:// address) and HSTS opted into. Run in a fresh process: settings are read once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from agentsite.env import env_proxy_ssl_header

ROOT = Path(__file__).resolve().parents[2]
# What docker-compose.yml asks the operator for (its ${VAR:?…}) and the HSTS opt-in.
OPERATOR = {
    "SECRET_KEY": "k9$Vt2#pQ7!xL0&mZ4^rW8*bN3(cY6)hJ1_dF5+gS0=aE2-uI7~oT4?vB9<nM3>",
    "GRIP_KEY": "grip-signing-key",
    "ALLOWED_HOSTS": "agents.example.com",
    "AGENTSITE_BASE_URL": "https://agents.example.com",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
}
_VAR = re.compile(r"\$\{(\w+)(?::([-?])([^}]*))?\}")


def _substitute(value: str, given: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?message}``."""
    def one(match: re.Match) -> str:
        name, kind, rest = match.groups()
        if given.get(name):
            return given[name]
        assert kind != "?", f"docker-compose.yml requires {name}: add it to OPERATOR"
        return rest if kind == "-" else ""
    return _VAR.sub(one, value)


def production_env(**overrides: str) -> dict[str, str]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    web = compose["services"]["web"]["environment"]
    given = {**OPERATOR, **overrides}
    env = {name: _substitute(str(value), given) for name, value in web.items()}
    keep = {k: v for k, v in os.environ.items()
            if k in ("PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV")}
    return {**keep, **env}


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", "check", "--deploy",
                           "--fail-level", "WARNING"],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_check_deploy_is_clean_in_the_production_environment():
    env = production_env()
    assert env["DEBUG"] == "false" and env["SECURE_PROXY_SSL_HEADER"]
    result = check_deploy(env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout, result.stdout + result.stderr


def test_without_the_https_address_check_deploy_names_what_is_missing():
    # The same deployment on a plain http:// address: cookies not secure, no redirect.
    result = check_deploy(production_env(AGENTSITE_BASE_URL="http://agents.example.com"))
    assert result.returncode != 0
    for warning in ("security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr + result.stdout, result.stderr


def test_plain_http_on_loopback_keeps_https_settings_off():
    # `make run` and the tests: http://127.0.0.1:8000, no proxy header trusted.
    assert not settings.SITE_HTTPS and settings.SECURE_PROXY_SSL_HEADER is None
    assert not (settings.SECURE_SSL_REDIRECT or settings.SESSION_COOKIE_SECURE
                or settings.CSRF_COOKIE_SECURE or settings.SECURE_HSTS_SECONDS)


def test_the_proxy_header_setting_reads_a_header_name(monkeypatch):
    for value, expected in [("X-Forwarded-Proto", ("HTTP_X_FORWARDED_PROTO", "https")),
                            ("X-Scheme: HTTPS", ("HTTP_X_SCHEME", "HTTPS")), ("", None)]:
        monkeypatch.setenv("SECURE_PROXY_SSL_HEADER", value)
        assert env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER") == expected
    monkeypatch.setenv("SECURE_PROXY_SSL_HEADER", "X Forwarded Proto")
    with pytest.raises(ImproperlyConfigured, match="SECURE_PROXY_SSL_HEADER"):
        env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")


def test_a_missing_subclassed_middleware_is_still_named():
    # Django's own "not in MIDDLEWARE" warnings are silenced (its names are subclassed:
    # agentsite.loop_middleware); agentsite.checks says them when the middleware is gone.
    from django.core.checks import run_checks
    from django.test import override_settings

    kept = [m for m in settings.MIDDLEWARE if "Csrf" not in m and "XFrame" not in m]
    with override_settings(MIDDLEWARE=kept):
        ids = {m.id for m in run_checks(include_deployment_checks=True)}
    assert {"agentsite.W002", "agentsite.W003"} <= ids, ids
    ids = {m.id for m in run_checks(include_deployment_checks=True)}
    assert not {"agentsite.W001", "agentsite.W002", "agentsite.W003"} & ids, ids

"""The embedded Postgres / Redis for the tests, started before pytest-django reads settings.

Settings only read DATABASE_URL / REDIS_URL (importing them starts nothing), so this
plugin, loaded first (``-p tests.embedded_services`` in pyproject's pytest options), sets
each missing URL from the embedded server: started, or found running. Every process the
tests start inherits the URLs. Servers this run started are stopped at its end.
"""

from __future__ import annotations

import os

import pytest

from agentsite import embedded

TEST_ENV = {"THROTTLE_TOKEN_RATE": "1000000/s", "THROTTLE_ADDRESS_RATE": "1000000/s",
            "THROTTLE_AUTH_FAILURE_RATE": "1000000/s",
            "THROTTLE_PASSWORD_RESET_RATE": "1000000/s", "LOGIN_FAILURE_LIMIT": "1000",
            "OUTBOUND_ALLOW": "127.0.0.1,::1,localhost"}


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    embedded.ensure_env()
    # Every process of the suite (this one and the servers it starts inherit os.environ):
    # the suite sends thousands of requests from 127.0.0.1 and fails logins on purpose;
    # tests/security tests the limits with small ones of their own. Its webhook receivers
    # and stand-in model providers listen on loopback (agentsite.outbound).
    for name, value in TEST_ENV.items():
        os.environ.setdefault(name, value)


def pytest_unconfigure(config: pytest.Config) -> None:
    # Stop the embedded Postgres / Redis only if this test run started them.
    embedded.stop_started()

"""The embedded Postgres / Redis for the tests, started before pytest-django reads settings.

Settings only read DATABASE_URL / REDIS_URL (importing them starts nothing), so this
plugin, loaded first (``-p tests.embedded_services`` in pyproject's pytest options), sets
each missing URL from the embedded server: started, or found running. Every process the
tests start inherits the URLs. Servers this run started are stopped at its end.

Under pytest-xdist (``make test`` runs the suite in parallel processes) each test process
has embedded servers of its own, in ``.data/xdist-<worker>/``, for the URLs that were not
given: Redis pub/sub is server-wide (the event fan-out and the user channels, ``user-<id>``
with ids from 1 in every test database, would mix two processes' events), beat's schedule
file lives in the data dir, and the Postgres outage tests stop connections server-wide.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The URLs the embedded servers provided in the xdist controller, so that its workers
# start servers of their own for exactly those (a given URL is shared by all).
PROVIDED = "AGENTSITE_TEST_PROVIDED"
ROOT = Path(__file__).resolve().parent.parent

TEST_ENV = {"THROTTLE_TOKEN_RATE": "1000000/s", "THROTTLE_ADDRESS_RATE": "1000000/s",
            "THROTTLE_AUTH_FAILURE_RATE": "1000000/s",
            "THROTTLE_PASSWORD_RESET_RATE": "1000000/s", "LOGIN_FAILURE_LIMIT": "1000",
            "OUTBOUND_ALLOW": "127.0.0.1,::1,localhost"}


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        # Before agentsite.embedded is imported: it reads its data dir once.
        os.environ["AGENTSITE_DATA_DIR"] = str(ROOT / ".data" / f"xdist-{worker}")
        for name in filter(None, os.environ.get(PROVIDED, "").split(",")):
            os.environ.pop(name, None)
        os.environ.pop("AGENTSITE_EMBEDDED", None)
    from agentsite import embedded

    provided = embedded.ensure_env()
    if not worker:
        os.environ[PROVIDED] = ",".join(
            {"postgres": "DATABASE_URL", "redis": "REDIS_URL"}[p] for p in provided)
    # Every process of the suite (this one and the servers it starts inherit os.environ):
    # the suite sends thousands of requests from 127.0.0.1 and fails logins on purpose;
    # tests/security tests the limits with small ones of their own. Its webhook receivers
    # and stand-in model providers listen on loopback (agentsite.outbound).
    for name, value in TEST_ENV.items():
        os.environ.setdefault(name, value)


def pytest_unconfigure(config: pytest.Config) -> None:
    from agentsite import embedded

    # Stop the embedded Postgres / Redis only if this test run started them.
    embedded.stop_started()

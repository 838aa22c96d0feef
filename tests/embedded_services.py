"""The embedded Postgres / Redis for the tests, started before pytest-django reads settings.

Settings only read DATABASE_URL / REDIS_URL (importing them starts nothing), so this
plugin, loaded first (``-p tests.embedded_services`` in pyproject's pytest options), sets
each missing URL from the embedded server: started, or found running. Every process the
tests start inherits the URLs. Servers this run started are stopped at its end.
"""

from __future__ import annotations

import pytest

from agentsite import embedded


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    embedded.ensure_env()


def pytest_unconfigure(config: pytest.Config) -> None:
    # Stop the embedded Postgres / Redis only if this test run started them.
    embedded.stop_started()

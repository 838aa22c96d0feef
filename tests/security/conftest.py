"""Browser fixtures for the token page (tests/browser_fixtures.py)."""

from tests.browser_fixtures import *  # noqa: F401,F403

from tests.browser_fixtures import *  # noqa: F401,F403

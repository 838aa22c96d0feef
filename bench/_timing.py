"""Per-phase breakdown of resumed segments from the timing log (``agentsite.timing``).

The bench marks ``client_send`` (just before it sends the request that resumes a run)
and ``client_done`` (when it has the segment's RUN_FINISHED) with the run id; the web
process, the worker and the publisher mark the steps in between. Each segment is the
stretch of one run's marks from a ``client_send`` to the next.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

from agentsite import timing

RUN_IN_PATH = re.compile(r"/runs/([0-9a-f-]{36})/")

# (label, from mark, to mark); a missing mark leaves the phase out of that segment.
PHASES = [
    # http_in: when our ASGI app has the request (before Django).
    ("HTTP in (client → our ASGI app)", "client_send", "http_in"),
    ("service + transaction (to commit)", "http_in", "enqueue"),
    ("  of which Django until the AG-UI view", "http_in", "view_in"),
    ("commit → task picked up by the worker", "enqueue", "task_start"),
    ("  of which send_task call", "enqueue", "enqueued"),
    ("  of which until the worker has it", "enqueue", "received"),
    ("claim", "task_start", "claimed"),
    ("graph steps + checkpoint writes", "claimed", "graph_done"),
    ("pause / finish transaction", "graph_done", "publish_start:RUN_FINISHED"),
    ("publish (store + fan-out)", "publish_start:RUN_FINISHED", "publish_end:RUN_FINISHED"),
    ("publish + relay to client", "publish_start:RUN_FINISHED", "client_done"),
    ("  of which web relay yields it", "publish_start:RUN_FINISHED", "relay_end"),
    ("whole segment", "client_send", "client_done"),
]


def mark(run_id: object, phase: str) -> None:
    """The bench's own marks (same log as the product's processes)."""
    timing.mark(run_id, phase)


def read(path: Path) -> dict[str, list[tuple[float, str]]]:
    marks: dict[str, list[tuple[float, str]]] = {}
    if not path.exists():
        return marks
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    # An AG-UI client knows its thread id, the web process marks which run serves it.
    alias = {row["k"]: row["p"][4:] for row in rows if row["p"].startswith("run=")}
    for row in rows:
        key, phase = alias.get(row["k"], row["k"]), row["p"]
        if phase.startswith("run="):
            continue
        if phase == "http_in" and key.startswith("/"):
            found = RUN_IN_PATH.search(key)
            if not found:
                continue
            key = found.group(1)
        marks.setdefault(key, []).append((row["t"], phase))
    return marks


def segments(path: Path) -> list[dict[str, float]]:
    out = []
    for rows in read(path).values():
        rows.sort()
        current: list[tuple[float, str]] | None = None
        for t, phase in rows:
            if phase == "client_send":
                if current:
                    out.append(current)
                current = []
            if current is not None:
                current.append((t, phase))
        if current:
            out.append(current)
    found = (_this_segment(s) for s in out)
    return [s for s in found if "client_done" in s and "enqueue" in s]


def _this_segment(rows: list[tuple[float, str]]) -> dict[str, float]:
    """First time of each mark; the client may send its next request before the worker
    has returned from the previous segment's last publish, so marks other than the
    client's and the web's arrival count only from this segment's enqueue on."""
    start = next((t for t, p in rows if p == "enqueue"), None)
    marks: dict[str, float] = {}
    for t, phase in rows:
        if start is None or t >= start or phase in ("client_send", "http_in", "view_in"):
            marks.setdefault(phase, t)
    return marks


def print_breakdown(path: Path, title: str) -> None:
    found = segments(path)
    print(f"\nper-phase breakdown, {title} ({len(found)} resumed segments; median / p99 ms)")
    for label, start, end in PHASES:
        values = [(s[end] - s[start]) * 1000 for s in found if start in s and end in s]
        if not values:
            continue
        values.sort()
        p99 = values[min(len(values) - 1, round(0.99 * (len(values) - 1)))]
        print(f"  {label:<40} {statistics.median(values):7.2f}   {p99:7.2f}")

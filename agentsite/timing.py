"""Per-phase timestamps for the benchmarks, off unless ``AGENTSITE_TIMING_LOG`` is set.

``mark(key, phase)`` appends one JSON line ``{"t", "k", "p", "pid"}`` (wall-clock
seconds, so stamps of the web, worker and bench processes on one machine compare) to
the file the variable names. Lines are small and written with one O_APPEND ``write``,
so processes can share the file. Off (the default) a mark is one global lookup.
``bench/_timing.py`` reads the file back into a per-phase breakdown.
"""

from __future__ import annotations

import json
import os
import time

_PATH = os.environ.get("AGENTSITE_TIMING_LOG") or ""
_fd: int | None = None

enabled = bool(_PATH)


def mark(key: object, phase: str, t: float | None = None) -> None:
    """Record that ``key`` (usually a run id) reached ``phase`` at ``t`` (default: now)."""
    if not enabled:
        return
    global _fd
    if _fd is None:
        _fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    line = json.dumps({"t": time.time() if t is None else t, "k": str(key), "p": phase,
                       "pid": os.getpid()})
    os.write(_fd, (line + "\n").encode())


def configure(path: str) -> None:
    """Turn marks on (a path) or off (empty) in this process; benchmarks call it."""
    global _PATH, _fd, enabled
    if _fd is not None:
        os.close(_fd)
    _PATH, _fd, enabled = path, None, bool(path)

"""Per-phase timestamps for the benchmarks, off unless ``AGENTSITE_TIMING_LOG`` is set.

``mark(key, phase)`` records one JSON line ``{"t", "k", "p", "pid"}`` (wall-clock
seconds, so stamps of the web, worker and bench processes on one machine compare) for
the file the variable names. Off (the default) a mark is one global lookup.

On, a mark only appends to a list: a thread writes the lines out every
``FLUSH_SECONDS`` (and at exit) with one O_APPEND ``write``, so processes can share the
file. A ``write`` per mark on the hot path was itself measurable: each one gives up the
GIL and waits to get it back from the event loop. ``bench/_timing.py`` reads the file
back into a per-phase breakdown once the processes have stopped.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time

FLUSH_SECONDS = 0.2

_PATH = os.environ.get("AGENTSITE_TIMING_LOG") or ""
_pending: list[tuple[float, str, str]] = []
_lock = threading.Lock()
_flusher: threading.Thread | None = None

enabled = bool(_PATH)


def mark(key: object, phase: str, t: float | None = None) -> None:
    """Record that ``key`` (usually a run id) reached ``phase`` at ``t`` (default: now)."""
    if not enabled:
        return
    _pending.append((time.time() if t is None else t, str(key), phase))
    if _flusher is None:
        _start_flusher()


def flush() -> None:
    """Write the recorded marks out now."""
    with _lock:
        if not _pending or not _PATH:
            return
        taken = _pending[:]
        del _pending[:len(taken)]  # marks appended meanwhile stay for the next flush
        pid = os.getpid()
        lines = "".join(json.dumps({"t": t, "k": k, "p": p, "pid": pid}) + "\n"
                        for t, k, p in taken)
        fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, lines.encode())
        finally:
            os.close(fd)


def _start_flusher() -> None:
    global _flusher
    with _lock:
        if _flusher is not None:
            return

        def loop() -> None:
            while True:
                time.sleep(FLUSH_SECONDS)
                flush()

        _flusher = threading.Thread(target=loop, name="timing-flush", daemon=True)
        _flusher.start()


atexit.register(flush)


def configure(path: str) -> None:
    """Turn marks on (a path) or off (empty) in this process; benchmarks call it."""
    global _PATH, enabled
    flush()
    _PATH, enabled = path, bool(path)

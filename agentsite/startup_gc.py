"""The garbage collector and what a long-running process loaded at startup.

A full collection (generation 2) looks at every object the collector tracks. Once
Django, LangGraph, pydantic and the agents are loaded that is about 190,000 objects, and
one full collection took 95-99 ms with the GIL held, about once every 100 `dev` runs
(``bench/inprocess.py`` with ``gc.callbacks``): a stall for every request, stream and
segment of the process at once, which is what a benchmark's p99 catches. ``gc.freeze()``
moves what exists at the end of startup to a permanent generation that collections
skip; what is made later is collected as before. Startup's own garbage is collected
first, so that none of it is kept for good.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Call once, when the process has loaded what it keeps for its whole life."""
    gc.collect()
    gc.freeze()

"""LangGraph's background threads from one pool of this process, for our segments.

A sync graph run (``Pregel.stream``) gets a new thread pool from langchain-core's
``get_executor_for_config`` for its checkpoint writes and parallel tasks, creates its
threads as it submits work, and joins them at its end. In the web process that was
about a sixth of a segment's thread time here (py-spy): ``Thread.start`` waits until the
new thread holds the GIL, which the event loop relaying the segment's events also
wants. Our segments (``execution.executor``, inside ``shared()``) take their threads
from one long-lived pool instead; each graph run keeps its own concurrency limit
(``max_concurrency``, else the stock pool's size) and FIFO queue, and LangGraph still
waits for its own tasks on exit (``BackgroundExecutor``) as before. Graph runs outside
``shared()`` in this process (a test, a benchmark's plain LangGraph) get the stock pool.

Hooked into LangGraph's ``pregel._executor`` module (its one use of the function), checked
against the pinned langgraph; ``install()`` refuses to patch anything else.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.runnables import config as lc_config
from langgraph.pregel import _executor

_active: ContextVar[bool] = ContextVar("agentsite_shared_graph_threads", default=False)
# The stock pool's size when a run sets no max_concurrency (ThreadPoolExecutor's default).
DEFAULT_LIMIT = min(32, (os.cpu_count() or 1) + 4)
# Threads are made only when none is idle; the bound is far above what the segments of
# one process use at once (slots × a run's limit, nested subgraphs included).
POOL_MAX = 512

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_install_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=POOL_MAX, thread_name_prefix="graph")
    return _pool


class RunShare:
    """One graph run's share of the pool: at most ``limit`` of its tasks at once, the
    rest queued in order, as its own pool of ``limit`` threads would run them."""

    def __init__(self, pool: ThreadPoolExecutor, limit: int) -> None:
        self.pool, self.limit = pool, limit
        self.lock = threading.Lock()
        self.running = 0
        self.waiting: deque[tuple[Future, Callable[..., Any], tuple, dict]] = deque()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        item = (Future(), fn, args, kwargs)
        with self.lock:
            if self.running >= self.limit:
                self.waiting.append(item)
                return item[0]
            self.running += 1
        self._start(item)
        return item[0]

    def _start(self, item: tuple[Future, Callable[..., Any], tuple, dict]) -> None:
        future, fn, args, kwargs = item

        def run() -> None:
            try:
                if future.set_running_or_notify_cancel():  # False: cancelled while queued
                    try:
                        result = fn(*args, **kwargs)
                    except BaseException as exc:  # as ThreadPoolExecutor's work items
                        future.set_exception(exc)
                    else:
                        future.set_result(result)
            finally:
                self._next()

        self.pool.submit(run)

    def _next(self) -> None:
        with self.lock:
            if not self.waiting:
                self.running -= 1
                return
            item = self.waiting.popleft()
        self._start(item)


@contextmanager
def _executor_for_config(config: Any) -> Iterator[Any]:
    if not _active.get():
        with lc_config.get_executor_for_config(config) as executor:
            yield executor
        return
    yield RunShare(_shared_pool(), (config or {}).get("max_concurrency") or DEFAULT_LIMIT)


def install() -> None:
    """Route LangGraph's sync background executors through ``_executor_for_config``."""
    with _install_lock:
        current = getattr(_executor, "get_executor_for_config", None)
        if current is _executor_for_config:
            return
        if current is not lc_config.get_executor_for_config:
            raise RuntimeError("langgraph.pregel._executor no longer uses langchain-core's "
                               "get_executor_for_config: check execution.graph_threads")
        _executor.get_executor_for_config = _executor_for_config


@contextmanager
def shared() -> Iterator[None]:
    """Graph runs started in this block (and their subgraphs) use the shared pool."""
    install()
    token = _active.set(True)
    try:
        yield
    finally:
        _active.reset(token)

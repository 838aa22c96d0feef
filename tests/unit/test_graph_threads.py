"""LangGraph's background threads from one pool (execution.graph_threads)."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import CancelledError, ThreadPoolExecutor
from typing import Annotated, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from execution import graph_threads
from execution.graph_threads import RunShare


def test_a_run_share_keeps_its_limit_and_order():
    pool = ThreadPoolExecutor(max_workers=8)
    share = RunShare(pool, limit=2)
    lock, running, peak, order = threading.Lock(), [0], [0], []
    gate = threading.Event()

    def task(n: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            order.append(n)
        gate.wait(5)
        with lock:
            running[0] -= 1
        return n * 10

    futures = [share.submit(task, n) for n in range(6)]
    time.sleep(0.1)
    assert order == [0, 1]  # two run, four wait in order
    assert futures[5].cancel()  # a queued task can still be cancelled
    gate.set()
    assert [f.result(5) for f in futures[:5]] == [0, 10, 20, 30, 40]
    with pytest.raises(CancelledError):
        futures[5].result()
    # Queued tasks are handed out in order, but two at a time they race to their first
    # line, as on a pool of two threads; with one slot the order is the submission's.
    assert peak[0] == 2 and order[:2] == [0, 1] and sorted(order) == [0, 1, 2, 3, 4]
    single, order[:] = RunShare(pool, limit=1), []
    gate.clear()
    futures = [single.submit(task, n) for n in range(5)]
    deadline = time.monotonic() + 5
    while not order and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # time for a second task to start, were the limit not kept
    assert order == [0]
    gate.set()
    assert [f.result(5) for f in futures] == [0, 10, 20, 30, 40] and order == [0, 1, 2, 3, 4]

    def boom() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        share.submit(boom).result(5)
    assert share.submit(task, 7).result(5) == 70  # the failure gave its slot back
    pool.shutdown()


class _State(TypedDict):
    seen: Annotated[list[str], lambda a, b: a + b]


def _fan_out_graph():
    graph = StateGraph(_State)
    for name in ("a", "b", "c"):  # parallel: the runner submits them to the executor
        graph.add_node(name, lambda state, name=name: {"seen": [threading.current_thread().name]})
        graph.add_edge(START, name)
        graph.add_edge(name, END)
    return graph.compile(checkpointer=InMemorySaver())


def test_graph_runs_in_shared_reuse_threads_and_others_keep_the_stock_pool():
    graph = _fan_out_graph()

    def run() -> list[str]:
        config = {"configurable": {"thread_id": str(uuid.uuid4())}}
        return graph.invoke({"seen": []}, config)["seen"]

    with graph_threads.shared():
        results = [run() for _ in range(20)]
    assert all(len(r) == 3 for r in results)
    # The shared pool's threads ran the parallel nodes and are reused: however many runs,
    # no more threads than one run may use at once.
    pool = {t.name for t in threading.enumerate() if t.name.startswith("graph")}
    assert {name for r in results for name in r} - {"MainThread"} <= pool
    assert 1 <= len(pool) <= graph_threads.DEFAULT_LIMIT
    # Outside shared(): LangGraph's own pool per run, as stock (new threads each run).
    first, second = run(), run()
    assert not any(name.startswith("graph") for name in first + second)
    assert (set(first) - {"MainThread"}).isdisjoint(set(second) - {"MainThread"})
    graph_threads.install()  # idempotent

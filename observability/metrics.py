"""The Prometheus metrics the engine records (docs/observability.md lists each one).

Counters and histograms are prometheus-client's, in its multiprocess mode wherever
``PROMETHEUS_MULTIPROC_DIR`` is set (``make run`` and the test stack set it for every
web, worker and beat process: ``agentsite.processes.metrics_dir``): each process writes
its own files there and ``/metrics`` sums them, so a run started on the web and executed
by a worker is counted in one place. Gauges of database state (pending, overdue, queue
depth) are read when scraped instead (``observability.collectors``).

Recording happens where the work happens (services, transitions, the worker); what a
service changes is counted once its transaction commits (``transaction.on_commit``): a
rolled-back change counts nothing. Label values are bounded: agent names (the registry),
formats (hitl.formats), surfaces (the doors' names, ``standing_approval``, ``none`` for
the deadline sweep), outcomes (statuses), model names (the configured providers) and
exception class names.
"""

from __future__ import annotations

import atexit
import os
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import transaction
from prometheus_client import Counter, Gauge, Histogram

# Seconds, from a click to a day-long wait: time to decision spans both.
DECISION_BUCKETS = (1, 5, 15, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 8 * 3600, 86400,
                    3 * 86400, float("inf"))
SEGMENT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, float("inf"))
# Milliseconds for a live event; minutes for one read back after a client's absence.
DELIVERY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300,
                    float("inf"))
WAIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, float("inf"))

RUNS_STARTED = Counter("agentsite_runs_started", "Runs started.", ["agent"])
RUNS_ENDED = Counter("agentsite_runs_ended", "Runs that reached an end status.",
                     ["agent", "outcome"])
RUN_RETRIES = Counter("agentsite_run_retries",
                      "Runs set to wait for an automatic retry (a transient failure).",
                      ["agent"])
SEGMENT_DURATION = Histogram("agentsite_segment_duration_seconds",
                             "Time a worker spent on one segment (claim to pause or end).",
                             ["agent"], buckets=SEGMENT_BUCKETS)
QUEUE_WAIT = Histogram("agentsite_segment_queue_wait_seconds",
                       "Time from a segment's task being enqueued to a worker claiming it.",
                       ["agent"], buckets=WAIT_BUCKETS)
TAKEOVERS = Counter("agentsite_segment_takeovers",
                    "Segments claimed from a worker whose lease lapsed.", ["agent"])
INTERRUPTS_OPENED = Counter("agentsite_interrupts_opened", "Interrupts raised by graphs.",
                            ["agent", "format"])
INTERRUPTS_DECIDED = Counter(
    "agentsite_interrupts_decided",
    "Interrupts answered (outcome decided) or cancelled, by the surface that did it.",
    ["agent", "format", "surface", "outcome"])
TIME_TO_DECISION = Histogram("agentsite_time_to_decision_seconds",
                             "Time from an interrupt being raised to its decision.",
                             ["agent", "format"], buckets=DECISION_BUCKETS)
ESCALATIONS = Counter("agentsite_interrupt_escalations",
                      "Pending interrupts escalated to more groups.", ["agent"])
EXPIRIES = Counter("agentsite_interrupt_expiries",
                   "Interrupts that passed their deadline unanswered (no default answer).",
                   ["agent", "format"])
MODEL_CALLS = Counter("agentsite_model_calls", "Chat model calls that returned.", ["model"])
MODEL_TOKENS = Counter("agentsite_model_tokens", "Tokens the providers reported.",
                       ["model", "kind"])
MODEL_FAILURES = Counter("agentsite_model_failures", "Chat model calls that raised.",
                         ["model", "error"])
MODEL_RETRIES = Counter("agentsite_model_retries",
                        "Chat model calls retried (LangChain's with_retry).", ["model"])
# A provider SDK's own attempts, seen in our HTTP client (observability.model_http).
MODEL_HTTP_ATTEMPTS = Counter(
    "agentsite_model_http_attempts",
    "HTTP requests to model providers, by outcome class (2xx, 4xx, 429, 5xx, timeout, "
    "connection).", ["model", "outcome"])
MODEL_HTTP_RETRIES = Counter(
    "agentsite_model_http_retries",
    "HTTP requests a provider SDK retried, by the failure class of the attempt retried.",
    ["model", "class"])
OPEN_STREAMS = Gauge("agentsite_open_streams",
                     "Event streams open now (REST SSE, AG-UI, LangGraph API).", ["surface"],
                     multiprocess_mode="livesum")
EVENT_DELIVERY = Histogram(
    "agentsite_event_delivery_seconds",
    "Time from an event's publish (stored in Redis) to a stream handing it to its client, "
    "live (fanned out) or read back from the store (a client catching up).",
    ["surface", "path"], buckets=DELIVERY_BUCKETS)
NOTIFICATIONS = Counter("agentsite_notifications",
                        "Notification deliveries (email, webhook) by outcome.",
                        ["channel", "outcome"])

RUN_STATUS, INTERRUPT_STATUS = "run.status", "interrupt.status"
# runs.models.AgentRun.FINISHED; written out here, below the runs layer.
FINISHED = frozenset({"completed", "rejected", "blocked", "failed", "cancelled", "expired"})


def _on_commit(record: Any) -> None:
    # Outside a transaction on_commit runs it at once; inside, only if it commits.
    transaction.on_commit(record)


def audits_recorded(rows: Iterable[Any]) -> None:
    """The run status changes among a transaction's audit rows (``runs.services``): runs
    started, ended and set to retry. ``rows``' ``run`` is loaded (the caller passed it)."""
    events = []
    for row in rows:
        if row.action != RUN_STATUS:
            continue
        agent = row.run.agent
        if row.to_status == "queued" and not row.from_status:
            events.append((RUNS_STARTED.labels(agent), 1))
        elif row.to_status in FINISHED:
            events.append((RUNS_ENDED.labels(agent, row.to_status), 1))
        elif row.to_status == "retrying":
            events.append((RUN_RETRIES.labels(agent), 1))
    if events:
        _on_commit(lambda: [child.inc(n) for child, n in events])


def interrupts_opened(*, agent: str, kinds: Iterable[str]) -> None:
    children = [INTERRUPTS_OPENED.labels(agent, kind) for kind in kinds]
    _on_commit(lambda: [child.inc() for child in children])


def interrupt_moved(*, agent: str, kind: str, before: str, to: str, surface: str,
                    created_at: datetime | None, decided_at: datetime | None) -> None:
    """An interrupt left ``pending`` (``hitl.transitions``): decided, cancelled or expired."""
    if before != "pending" or to == "pending":
        return
    if to == "expired":
        child = EXPIRIES.labels(agent, kind)
        _on_commit(child.inc)
        return
    decided = INTERRUPTS_DECIDED.labels(agent, kind, surface or "none", to)
    waited = None
    if to == "decided" and decided_at is not None:
        # A row answered as it is raised (a standing approval) has no created_at yet.
        waited = max(0.0, (decided_at - (created_at or decided_at)).total_seconds())
    timer = TIME_TO_DECISION.labels(agent, kind)

    def record() -> None:
        decided.inc()
        if waited is not None:
            timer.observe(waited)
    _on_commit(record)


def interrupt_escalated(*, agent: str) -> None:
    _on_commit(ESCALATIONS.labels(agent).inc)


# The time a task message was sent (``observability.celery_hooks`` stamps it on publish).
ENQUEUED_AT_HEADER = "agentsite_enqueued_at"


@contextmanager
def segment_observed(*, agent: str, takeover: bool, enqueued_at: Any) -> Iterator[None]:
    """Around a claimed segment's execution (the claim is committed): its wait in the
    queue, whether it was a takeover, and how long it ran, however it ended."""
    if takeover:
        TAKEOVERS.labels(agent).inc()
    if isinstance(enqueued_at, (int, float)):
        QUEUE_WAIT.labels(agent).observe(max(0.0, time.time() - enqueued_at))
    began = time.monotonic()
    try:
        yield
    finally:
        SEGMENT_DURATION.labels(agent).observe(time.monotonic() - began)


def event_delivered(*, surface: str, path: str, published_at: Any) -> None:
    """A stream handed an event to its client (``streams.follow``): ``published_at`` is
    the publish time the event store stamped (seconds, as text)."""
    try:
        waited = time.time() - float(published_at)
    except (TypeError, ValueError):
        return
    child = _delivery.get((surface, path))
    if child is None:  # labels() per event cost more than the observation (lock, checks)
        child = _delivery[surface, path] = EVENT_DELIVERY.labels(surface, path)
    child.observe(max(0.0, waited))


# EVENT_DELIVERY's children by (surface, path): a handful, made once per process.
_delivery: dict[tuple[str, str], Any] = {}


def notification_done(*, channel: str, outcome: str, count: int = 1) -> None:
    """Delivery attempts of a notification: ``outcome`` delivered or failed."""
    if count:
        NOTIFICATIONS.labels(channel, outcome).inc(count)


async def stream_counted(stream: AsyncIterator[str], *, surface: str) -> AsyncIterator[str]:
    """An SSE body, counted in ``agentsite_open_streams`` while it is open."""
    gauge = OPEN_STREAMS.labels(surface)
    gauge.inc()
    try:
        async for chunk in stream:
            yield chunk
    finally:
        gauge.dec()
        # Closed (the client went away): the stream's own clean-up runs now, as it would
        # unwrapped, not whenever the collector gets to it.
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


def process_exited(pid: int | None = None) -> None:
    """Drop a finished process's live gauges (multiprocess mode's ``mark_process_dead``)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())


# A web process (or a worker's main process) ending normally; a pool child is told by
# Celery's worker_process_shutdown (observability.celery_hooks).
atexit.register(process_exited)

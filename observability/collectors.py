"""Gauges read from the business tables and the broker when ``/metrics`` is scraped: what
is waiting now is state, not an event, so no process has to keep a count of it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import redis
from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from hitl.models import AgentInterrupt

NO_GROUP = "none"


def overdue_q(now: object = None) -> Q:
    """A pending interrupt is overdue once past its escalation time or deadline, or
    waiting longer than ``INTERRUPT_OVERDUE_SECONDS`` (the Insights page counts alike)."""
    now = now or timezone.now()
    return (Q(escalate_at__lt=now) | Q(expires_at__lt=now)
            | Q(created_at__lt=now - timedelta(seconds=settings.INTERRUPT_OVERDUE_SECONDS)))


class StateCollector(Collector):
    """Pending and overdue interrupts per agent and assignee group (one query), and the
    Celery queue's depth (one LLEN)."""

    def collect(self) -> Iterator[Metric]:
        pending = GaugeMetricFamily("agentsite_interrupts_pending",
                                    "Interrupts waiting for a decision now.",
                                    labels=["agent", "group"])
        overdue = GaugeMetricFamily("agentsite_interrupts_overdue",
                                    "Pending interrupts past their escalation time, deadline "
                                    "or INTERRUPT_OVERDUE_SECONDS.", labels=["agent", "group"])
        rows = (AgentInterrupt.objects.filter(status=AgentInterrupt.Status.PENDING)
                .values("run__agent", "assigned_groups__name")
                .annotate(pending=Count("id"), overdue=Count("id", filter=overdue_q()))
                .order_by())
        for row in rows:
            labels = [row["run__agent"], row["assigned_groups__name"] or NO_GROUP]
            pending.add_metric(labels, row["pending"])
            overdue.add_metric(labels, row["overdue"])
        yield pending
        yield overdue
        depth = GaugeMetricFamily("agentsite_celery_queue_depth",
                                  "Task messages waiting in the Celery queue.", labels=["queue"])
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        try:
            with redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2) as client:
                depth.add_metric([queue], client.llen(queue))
        except redis.RedisError:
            pass  # the broker down: no sample (the `up` of the scrape stays 1)
        yield depth

"""The LangGraph API's per-run ``webhook``: when a run started with one ends, its URL is
POSTed the run in the Platform's shape with the thread's values (as LangGraph Server
posts it), through the site's webhook delivery (``hitl.notify``: the delivery row is
written in the transaction that ends the run, sent on commit, retried with backoff,
logged in the admin's *Webhook deliveries*, refused for internal addresses, signed with
``RUN_WEBHOOK_SECRET`` when it is set).

"Ends" is our run's end (completed, rejected, blocked, failed, cancelled, expired), not a
pause at an interrupt: here a paused run goes on in the same run when answered."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from hitl import notify
from lgapi import shapes
from lgapi.state import latest, values_of
from runs.models import AgentRun

EVENT = "run.finished"


def body(run: AgentRun) -> dict[str, Any]:
    """The Platform's run, with the thread's values and the run's end."""
    failed = run.status in (AgentRun.Status.FAILED, AgentRun.Status.EXPIRED)
    return {**shapes.run_json(run), "values": values_of(latest(run.thread_id)),
            "error": (run.error or run.status) if failed else None,
            "run_ended_at": run.finished_at.isoformat() if run.finished_at else None,
            "webhook_sent_at": timezone.now().isoformat()}


def on_run_finished(sender: type, *, run: AgentRun, **kwargs: Any) -> None:
    """``runs.signals.run_finished``, in the transaction that ends the run."""
    if run.webhook:
        notify.webhook_owe(url=run.webhook, event=EVENT, body=body(run))

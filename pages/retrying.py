"""What a person reads while a run waits to retry after a model provider failure.

Shared by the chat page and the run's admin page; the AG-UI CUSTOM event
"agentsite.retrying" (execution.lifecycle) carries the same facts to live pages.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.utils import timezone

from runs.models import AgentRun


def retry_banner(run: AgentRun | None) -> dict[str, Any] | None:
    """"The model provider is rate-limiting requests (429). Retrying in 20 s (attempt 2 of
    5)" as its parts; None unless ``run`` is retrying. ``seconds`` counts from now, so a
    page's countdown needs no clock agreement with the server."""
    if run is None or run.status != AgentRun.Status.RETRYING:
        return None
    seconds = 0
    if run.retry_at is not None:
        seconds = max(0, math.ceil((run.retry_at - timezone.now()).total_seconds()))
    budget = settings.MODEL_RUN_RETRIES
    reason = (run.retry_reason or "The run is being retried").rstrip(". ")
    when = f"in {seconds} s" if seconds else "now"
    # An automatic retry waits; a person's retry is due at once (no attempt number).
    attempt = run.retries if 0 < run.retries <= budget and seconds else None
    text = f"{reason}. Retrying {when}" + (f" (attempt {attempt} of {budget})" if attempt
                                           else "")
    return {"reason": reason, "seconds": seconds, "when": when, "attempt": attempt,
            "of": budget, "retry_at": run.retry_at, "text": text}

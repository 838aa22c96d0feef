"""Issue 35 item 17: the run page's timeline numbers segments as ``AgentRun.segments``
does (a retry is another attempt at the same segment, not a new one), and shows each
attempt's token usage under it."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from runs.models import AgentRun, SegmentUsage
from runs.services import audit
from tests.retry_rows import make_run

pytestmark = pytest.mark.django_db


def words(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def step(run: AgentRun, before: str, after: str) -> None:
    audit(run=run, action="run.status", from_status=before, to_status=after)


def used(run: AgentRun, segment: int, tokens: int) -> None:
    SegmentUsage.objects.create(run=run, segment=segment, model_name="gpt-4o-mini", calls=1,
                                input_tokens=tokens, output_tokens=1, total_tokens=tokens + 1)


def test_retries_are_attempts_of_one_segment_with_their_usage(staff):
    run = make_run(staff["alice"], AgentRun.Status.RUNNING)
    AgentRun.objects.filter(pk=run.pk).update(segments=2)
    step(run, "", "queued")
    step(run, "queued", "running")
    used(run, 1, 100)  # the attempt that was cut, recorded before it waits
    step(run, "running", "retrying")
    step(run, "retrying", "running")
    used(run, 1, 200)
    step(run, "running", "retrying")
    step(run, "retrying", "running")
    used(run, 1, 300)
    step(run, "running", "paused")
    step(run, "paused", "resuming")
    step(run, "resuming", "running")

    client = Client()
    client.force_login(staff["reviewer"])
    html = client.get(f"/admin/runs/agentrun/{run.pk}/change/").content.decode()
    rows = [words(r) for r in re.findall(r'<tr class="queue-segment">(.*?)</tr>', html, re.S)]
    assert len(rows) == 4, rows
    heads = [re.match(r"\s*(Segment \d+(?:, attempt \d+ \(retried\))?):", r).group(1)
             for r in rows]
    assert heads == ["Segment 1", "Segment 1, attempt 2 (retried)",
                     "Segment 1, attempt 3 (retried)", "Segment 2"], heads
    assert "ended retrying" in rows[0] and "ended paused" in rows[2] and "not ended" in rows[3]
    # Each attempt's tokens under it, none under the segment still running.
    assert ["Tokens: 100 in" in rows[0], "Tokens: 200 in" in rows[1],
            "Tokens: 300 in" in rows[2], "Tokens" in rows[3]] == [True, True, True, False]
    # The field beside it agrees: two segments.
    assert re.search(r"Segments:\s*</label>\s*<div class=\"readonly\">2</div>", html), html

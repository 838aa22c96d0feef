"""A seeded set of interrupts and usage whose Insights figures are known (worked out in
the comments), for tests/admin/test_insights*.py."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from typing import Any

from django.contrib.auth.models import Group
from django.utils import timezone

from hitl.models import AgentInterrupt
from runs.models import AgentRun, Conversation, SegmentUsage

BATCH = {"action_requests": [{"name": "send_email", "args": {}},
                             {"name": "delete_file", "args": {}}],
         "review_configs": []}


def _run(owner: Any, agent: str) -> AgentRun:
    conversation = Conversation.objects.create(owner=owner, agent=agent, title="t")
    return AgentRun.objects.create(owner=owner, conversation=conversation, agent=agent,
                                   agent_version="1", thread_id=str(conversation.id),
                                   status=AgentRun.Status.PAUSED, segments=1)


def _asked(run: AgentRun, kind: str, created: datetime, *, waited: float | None = None,
           by: Any = None, request: Any = None, decision: Any = None,
           status: str = "applied", **fields: Any) -> AgentInterrupt:
    row = AgentInterrupt.objects.create(
        run=run, interrupt_id=f"{kind}-{AgentInterrupt.objects.count()}", kind=kind,
        request=request or {"type": kind, "message": "?"}, decision=decision,
        decided_by=by, status=status if waited is not None else fields.pop("st", "pending"),
        decided_at=created + timedelta(seconds=waited) if waited is not None else None,
        **fields)
    AgentInterrupt.objects.filter(pk=row.pk).update(created_at=created)  # auto_now_add
    return row


def seed(owner: Any, reviewer: Any, superuser: Any) -> dict[str, Any]:
    """Days -2 .. today (server time zone). Expected figures (range: those three days):
    - time to decision: agent a1 (approval 10, 20, 30, 40 s by reviewer; review 50 s by
      reviewer) p50 30, p90 46; a2 (hitl_request 100 s and tool_approval 60 s, by the
      superuser) p50 80, p90 96. Reviewer: 5 decided; superuser: 2.
    - tools: send_email approve 1 + edit 1; delete_file reject 1; review respond 1.
    - deadlines: 10 raised, 1 overdue (past its deadline), 1 escalated, 1 expired.
    - backlog at the end of each day: day -2 → 1 (the expired one, open until day -1
      noon), day -1 → 1 (the overdue one), today → 2 (and the escalated one).
    - usage: a1 on gpt-x (priced 1/2 USD per M): 1,000,000 in + 500,000 out = 2.0000;
      a2 on mystery (no price) unknown.
    """
    today = timezone.localdate()
    zone = timezone.get_current_timezone()
    noon = [datetime.combine(today - timedelta(days=d), time(12), zone) for d in (2, 1)]
    a1, a2 = _run(owner, "a1"), _run(owner, "a2")
    ops = Group.objects.create(name="ops")
    for seconds in (10, 20, 30, 40):
        row = _asked(a1, "approval", noon[0], waited=seconds, by=reviewer,
                     decision={"approved": True})
        if seconds == 10:
            row.assigned_groups.add(ops)
    _asked(a1, "review", noon[0], waited=50, by=reviewer,
           decision={"decision": "respond", "feedback": "shorter"})
    _asked(a2, "hitl_request", noon[0], waited=100, by=superuser, request=BATCH,
           decision={"decisions": [{"type": "approve"}, {"type": "reject"}]})
    _asked(a2, "tool_approval", noon[0], waited=60, by=superuser,
           request={"type": "tool_approval", "name": "send_email", "args": {}},
           decision={"type": "edit", "edited_action": {"name": "send_email", "args": {}}})
    _asked(a1, "approval", noon[0], st="expired", expires_at=noon[1])
    _asked(a1, "approval", noon[1], expires_at=noon[1] + timedelta(hours=1))  # overdue
    _asked(a2, "input", timezone.now() - timedelta(seconds=60),
           escalated_at=timezone.now())
    SegmentUsage.objects.create(run=a1, segment=1, model_name="gpt-x", calls=3,
                                input_tokens=1_000_000, output_tokens=500_000,
                                total_tokens=1_500_000)
    SegmentUsage.objects.create(run=a2, segment=1, model_name="mystery", calls=1,
                                input_tokens=10, output_tokens=5, total_tokens=15)
    return {"today": today, "start": today - timedelta(days=2)}

"""Fixtures of the admin queue tests: staff users and paused runs with pending interrupts.

``paused_run`` writes the rows a worker writes when a graph pauses (a paused AgentRun
with its conversation, one pending AgentInterrupt per request), for tests that exercise
the admin and the decision service without running a graph.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone

from tests.accounts import make_user

REQUESTS: dict[str, dict[str, Any]] = {
    "approval": {"type": "approval", "message": "Ship it?", "details": {"amount": 3}},
    "review": {"type": "review", "message": "Review the plan",
               "proposal": {"title": "Release", "steps": ["build", "ship"]},
               "allowed": ["approve", "edit", "reject"]},
    "input": {"type": "input", "message": "Name the release", "placeholder": "v1"},
    "select": {"type": "select", "message": "Pick a channel",
               "options": [{"label": "Stable", "value": "stable"},
                           {"label": "Beta", "value": "beta"}]},
}


@pytest.fixture
def staff(django_user_model) -> dict[str, Any]:
    """reviewer: staff + hitl.decide_interrupt · clerk: staff only · member: not staff."""
    made = {}
    for name, is_staff in (("reviewer", True), ("clerk", True), ("member", False),
                           ("alice", False)):
        made[name] = make_user(name, password="pw-" + name, is_staff=is_staff)
    made["reviewer"].user_permissions.add(Permission.objects.get(codename="decide_interrupt"))
    return made


@pytest.fixture
def paused_run() -> Callable[..., list[Any]]:
    from hitl.models import AgentInterrupt
    from runs import registry
    from runs.models import AgentRun, Conversation, Message

    counter = {"n": 0}

    def make(owner: Any, kinds: list[str], *, agent: str = "approvals", age_minutes: int = 60,
             expires_in: timedelta | None = None) -> list[AgentInterrupt]:
        counter["n"] += 1
        spec = registry.get(agent)
        conversation = Conversation.objects.create(owner=owner, agent=agent, title="t")
        Message.objects.create(conversation=conversation, role="user",
                               content=f"please do thing {counter['n']}")
        run = AgentRun.objects.create(owner=owner, conversation=conversation, agent=agent,
                                      agent_version=spec.version, thread_id=str(conversation.id),
                                      status=AgentRun.Status.PAUSED, segments=1)
        rows = []
        for i, kind in enumerate(kinds):
            row = AgentInterrupt.objects.create(
                run=run, interrupt_id=f"i{counter['n']}-{i}-{kind}", kind=kind,
                request=REQUESTS[kind],
                expires_at=timezone.now() + expires_in if expires_in is not None else None)
            # created_at is auto_now_add: set the age the test asks for.
            created = timezone.now() - timedelta(minutes=age_minutes - i)
            AgentInterrupt.objects.filter(pk=row.pk).update(created_at=created)
            row.created_at = created
            rows.append(row)
        return rows

    return make


# --- browser: the shared fixtures (pytest-playwright, headless Chromium) ----------------------

from tests.browser_fixtures import *  # noqa: E402,F401,F403

"""The fast tier: the services' and policies' rules on the test database alone.

No Celery worker, web server or browser: these tests never touch the session ``services``
fixture (nor ``live`` / ``api``), run inside a rolled-back transaction (``db``), and
capture what would be enqueued or published on commit instead of sending it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def people(db) -> dict[str, Any]:
    """owner, reviewer (may decide others' runs), outsider, and second_reviewer."""
    from django.contrib.auth.models import Permission

    from tests.accounts import make_user

    decide = Permission.objects.get(codename="decide_interrupt")
    made = {name: make_user(name, f"{name}@example.com", "pw")
            for name in ("owner", "reviewer", "second_reviewer", "outsider")}
    for name in ("reviewer", "second_reviewer"):
        made[name].user_permissions.add(decide)
    return made


APPROVAL = {"type": "approval", "message": "Deploy?"}


@pytest.fixture
def paused_run(people, django_capture_on_commit_callbacks) -> Callable[..., Any]:
    """make(**interrupt_fields) → a paused run of the owner's with one pending approval
    interrupt "i-1" (fields override the row's policy: expires_at, required_approvals…)."""
    from hitl.models import AgentInterrupt
    from runs.models import AgentRun
    from runs.services import run_start

    def make(*, count: int = 1, **fields: Any) -> AgentRun:
        with django_capture_on_commit_callbacks():
            run = run_start(owner=people["owner"], agent="dev", message="hi", surface="api")
        AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.PAUSED)
        for n in range(1, count + 1):
            AgentInterrupt.objects.create(run=run, interrupt_id=f"i-{n}", kind="approval",
                                          request=APPROVAL, **fields)
        run.refresh_from_db()
        return run

    return make

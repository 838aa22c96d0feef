"""Fixtures for the policy tests: reviewers (staff, ``hitl.decide_interrupt``), a group,
a user who may override assignments, and a way to start a ``policy_ask`` run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Group, Permission

import tests.agent_catalog  # noqa: F401 - the test agents, for services called in-process
from tests.accounts import make_token, make_user
from tests.helpers import start_run, wait_run


@pytest.fixture
def people(users) -> dict[str, Any]:
    """alice, bob, carol (in group legal) and boss (may override): reviewers and staff."""
    decide = Permission.objects.get(codename="decide_interrupt")
    override = Permission.objects.get(codename="override_assignment")
    legal = Group.objects.create(name="legal")
    made: dict[str, Any] = {"legal": legal, **users}
    for name in ("alice", "bob", "carol", "boss"):
        user = make_user(name, f"{name}@example.com", "pw-" + name, is_staff=True)
        user.user_permissions.add(decide)
        made[name] = user
        made[f"{name}_token"] = make_token(user)
    made["carol"].groups.add(legal)
    made["boss"].user_permissions.add(override)
    return made


@pytest.fixture
def client_of(live, people) -> Callable[[str], httpx.Client]:
    clients: list[httpx.Client] = []

    def make(who: str) -> httpx.Client:
        client = httpx.Client(base_url=live["base_url"], timeout=30,
                              headers={"Authorization": f"Token {people[who + '_token']}"})
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def ask(client: httpx.Client, *, agent: str = "policy_ask", kind: str = "approval",
        details: dict | None = None, **policy: Any) -> dict[str, Any]:
    """Start a run whose one question carries ``policy``; return it paused."""
    run = start_run(client, agent, input={"kind": kind, "details": details, "policy": policy})
    return wait_run(client, run["id"], "paused")

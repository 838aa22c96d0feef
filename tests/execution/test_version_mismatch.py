"""A run paused under one agent version is not resumed by an incompatible one."""

from __future__ import annotations

import pytest

from runs import registry
from runs.models import AgentRun
from tests.helpers import answer, pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_resume_refused_when_agent_version_changed(api):
    client = api("owner")
    run = wait_run(client, start_run(client)["id"], "paused")
    # The run was started by an older deployment of the agent.
    AgentRun.objects.filter(pk=run["id"]).update(agent_version="0-old")
    response = answer(client, run, {"value": "x"})
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "version_mismatch"
    assert "0-old" in body["detail"] and registry.get("dev").version in body["detail"]
    db_run = AgentRun.objects.get(pk=run["id"])
    assert db_run.status == "paused" and db_run.segments == 1
    assert db_run.interrupts.get().status == "pending"
    assert not db_run.audit_log.filter(action="decision").exists()


def test_declared_compatible_version_is_accepted():
    spec = registry.get("dev")
    compatible = registry.Agent(**{**spec.__dict__, "compatible_versions": frozenset({"0-old"})})
    assert compatible.accepts_version("0-old")
    assert compatible.accepts_version(spec.version)
    assert not spec.accepts_version("0-old")
    assert pending  # helpers import stays used

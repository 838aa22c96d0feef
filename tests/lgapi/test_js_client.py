"""LangGraph's JS client (@langchain/langgraph-sdk Client, Node, pinned in tests/node/
package-lock.json) drives the `dev` agent through /lg: tests/node/lg_dev.test.mjs."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, AuditLog
from tests.agui.test_agui_node import node_test

pytestmark = pytest.mark.django_db(transaction=True)


def test_js_client_drives_dev_agent(live, users):
    node_test(live["base_url"], users["owner_token"], "lg_dev.test.mjs")
    assert sorted(AgentRun.objects.values_list("status", flat=True)) == ["cancelled",
                                                                         "completed"]
    assert set(AuditLog.objects.filter(action="decision").values_list(
        "surface", flat=True)) == {"langgraph"}

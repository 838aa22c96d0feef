"""Django system checks (``manage.py check``, and ``migrate`` at ``make run``'s start):
the agent catalog loads, so a bad entry is named when the site starts, not at a run."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from runs import registry


@checks.register()
def agent_catalog(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    try:
        registry.all_agents()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="agentsite.E001",
                             hint="See docs/agents.md, \"Adding an agent\".")]
    return []

"""The agent of the Redis outage stream tests, as the registry knows it (metadata only:
the web process imports this and no graph; the graph is tests/faults/outage_agents.py).
Loaded only by those tests' own web and worker processes (AGENTSITE_AGENT_MODULES)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from runs.registry import Agent, register


class QuietInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


register(Agent(name="quiet_outage", version="1",
               description="slow steps that touch no Redis (tests only)",
               input_model=QuietInput, builder="tests.faults.outage_agents.build",
               initial_state="tests.faults.outage_agents.initial_state", model_tokens=False))

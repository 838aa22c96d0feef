"""Test-only agents, as the registry knows them: metadata only, as ``agents/catalog.py``.

Loaded by the test worker and server through AGENTSITE_AGENT_MODULES (tests/conftest.py,
tests/faults/cluster.py): the web process imports this and no graph. The graphs are in
tests/counting_agents.py, faulty_agents.py, slow_agents.py and policy_agents.py,
imported only by the worker.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from agents.catalog import AssistantInput, TasklistInput
from runs.registry import Agent, Policy, register


class FaultyInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SlowInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    topic: str = "slow"


class AskInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str = "approval"  # approval | review | input | tool
    tool: str = "file_ticket"
    details: dict[str, Any] | None = None
    policy: dict[str, Any] = {}


# The shipped tasklist and assistant graphs with a call log (tests/counting_agents.py).
register(Agent(name="tasklist_counted", version="1", description="tasklist with a call log "
               "(tests only)", input_model=TasklistInput,
               builder="tests.counting_agents.tasklist_build",
               initial_state="agents.tasklist.initial_state"))
register(Agent(name="assistant_counted", version="1", description="assistant with a call log "
               "(tests only)", input_model=AssistantInput,
               builder="tests.counting_agents.assistant_build",
               initial_state="agents.assistant.initial_state"))
register(Agent(name="faulty", version="1", description="raises after one answer (tests)",
               input_model=FaultyInput, builder="tests.faulty_agents.build",
               initial_state="tests.faulty_agents.initial_state"))
register(Agent(name="slow_counted", version="1", description="slow steps (tests only)",
               input_model=SlowInput, builder="tests.slow_agents.build",
               initial_state="tests.slow_agents.initial_state"))

# One question whose kind and policy come from the run's input, and the same question
# under agent policies (tests/policy_agents.py).
_ASK = {"version": "1", "input_model": AskInput, "builder": "tests.policy_agents.build",
        "initial_state": "tests.policy_agents.initial_state"}
register(Agent(name="policy_ask", description="one question, policy from input", **_ASK))
register(Agent(name="policy_foureyes", description="one question; agent policy: four-eyes",
               policy=Policy(requester_may_decide=False), **_ASK))
register(Agent(name="policy_deadline", description="one question; agent policy: a 1 s deadline",
               policy=Policy(timeout=1.0), **_ASK))
register(Agent(name="policy_quorum", description="one question; agent policy: two approvals",
               policy=Policy(required_approvals=2), **_ASK))

"""Provider test agents, as the registry knows them (metadata only, as
tests/agent_catalog.py): loaded by the provider web process and worker through
AGENTSITE_AGENT_MODULES (tests/providers/conftest.py). The graph is in
tests/providers/agents.py, imported only by the worker.
"""

from __future__ import annotations

from agents.catalog import AssistantInput
from runs.registry import Agent, Policy, register
from tests.agent_catalog import NoInput

# tests/adopter_agents.py's create_agent + HumanInTheLoopMiddleware agent, on the chat
# model AGENT_MODEL names (there, a scripted model stands in).
register(Agent(name="provider_adopter", version="1", input_model=NoInput,
               description="create_agent + HumanInTheLoopMiddleware on AGENT_MODEL (tests)",
               builder="tests.providers.agents.adopter_build",
               initial_state="tests.adopter_agents.messages_state"))

# The assistant, its questions due within a minute (the expiry test sweeps past that).
register(Agent(name="provider_assistant_deadline", version="1", input_model=AssistantInput,
               description="assistant whose questions expire (tests)",
               builder="agents.assistant.build", initial_state="agents.assistant.initial_state",
               policy=Policy(timeout=60.0)))

# A model turn whose calls a cancel cannot cut (its own SDK client), for the fencing test.
register(Agent(name="provider_uncut", version="1", input_model=AssistantInput,
               description="a model turn on the SDK's own client (tests)",
               builder="tests.providers.agents.uncut_build",
               initial_state="agents.assistant.initial_state"))

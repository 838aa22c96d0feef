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
# The last step writes the run's final text (tests/summary_agents.py), streamed as model
# tokens would be or read from the nodes' updates.
for _name, _tokens in (("lost_summary", True), ("lost_summary_updates", False)):
    register(Agent(name=_name, version="1", description="final text in the last step (tests)",
                   input_model=SlowInput, builder="tests.summary_agents.build",
                   initial_state="tests.summary_agents.initial_state", model_tokens=_tokens))

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


# Agents as adopters bring them, unchanged (tests/adopter_agents.py): one per interrupt
# format, and the three ``builder`` forms (a compiled graph, a function returning one, a
# function returning a StateGraph).
class NoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OddInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    which: str = "none"


_A = "tests.adopter_agents."
_PLAIN = {"version": "1", "input_model": NoInput, "model_tokens": False,
          "initial_state": _A + "empty_state"}
register(Agent(name="adopter_batched", version="1", input_model=NoInput,
               description="create_agent + HumanInTheLoopMiddleware, batched (tests)",
               builder=_A + "hitl_batched_graph", initial_state=_A + "messages_state"))
register(Agent(name="adopter_per_call", version="1", input_model=NoInput,
               description="create_agent + HumanInTheLoopMiddleware, per call (tests)",
               builder=_A + "hitl_per_call_build", initial_state=_A + "messages_state"))
register(Agent(name="adopter_approve_only", version="1", input_model=NoInput,
               description="HumanInTheLoopMiddleware, a tool that may only be approved (tests)",
               builder=_A + "hitl_approve_only_build", initial_state=_A + "messages_state"))
register(Agent(name="adopter_string", description="interrupt('a string') (tests)",
               builder=_A + "plain_string_build", **_PLAIN))
register(Agent(name="adopter_subgraph", description="a subgraph, then a question (tests)",
               builder=_A + "subgraph_build", **_PLAIN))
register(Agent(name="adopter_options", description="interrupt({question, options}) (tests)",
               builder=_A + "question_options_build", **_PLAIN))
register(Agent(name="adopter_typed", description="interrupt(..., response_schema=) (tests)",
               builder=_A + "typed_answer_build", **_PLAIN))
register(Agent(name="adopter_batched_by_hand", description="a HITLRequest from a node (tests)",
               builder=_A + "hitl_request_by_hand_build", **_PLAIN))
register(Agent(name="adopter_inbox", description="Agent Inbox HumanInterrupt (tests)",
               builder=_A + "inbox_build", **_PLAIN))
register(Agent(name="adopter_odd", version="1", input_model=OddInput, model_tokens=False,
               description="raises an odd value (tests)", builder=_A + "odd_values_build",
               initial_state=_A + "odd_state"))

"""The shipped agents, as the registry knows them: metadata only, no graph code.

Every process imports this module (settings.AGENTSITE_AGENT_MODULES), web processes
included: the web validates a run's input with the input model, shows the description
and applies the policy, and never runs or compiles a graph. So this module imports
pydantic and the registry only. Each entry names its graph by dotted path: the builder
and the first state live in the agent's own module (``agents/dev.py``, …), imported only
by the Celery worker, the first time it runs that agent.

To add an agent: write its graph module (a ``build()`` returning the uncompiled
StateGraph and an ``initial_state(input, message)``), then register an entry here, or in
a module of your own listed in AGENTSITE_AGENT_MODULES.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from runs.registry import Agent, register

# A tasklist's document reference (also read from the chat message by the graph).
DOC_REF = r"docs://(versions|uploads)/[A-Za-z0-9][A-Za-z0-9._-]*\.md"


class DevInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    topic: str = Field(default="the demo project", min_length=1, max_length=200,
                       description="What the answers are about")


class ShowcaseInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ApprovalsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    change: str = Field(default="Ship the new billing flow", min_length=1, max_length=500)


class TasklistInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    doc: str | None = Field(default=None, pattern="^" + DOC_REF + "$",
                            description="docs://versions/<name>.md (shipped) or "
                                        "docs://uploads/<name>.md (uploaded by you); "
                                        "or send the message '/tasklist @<doc>'")


class AssistantInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(default="", max_length=2000,
                          description="the question (or send it as the chat message)")


class StockInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(default="", max_length=500,
                       description="company name, alias or code (or send it as the message)")


register(Agent(
    name="dev",
    version="1",
    description="HITL demo: asks for a name (input), a color (select), extras "
                "(multiSelect) and an approval, then writes a summary.",
    input_model=DevInput,
    builder="agents.dev.build",
    initial_state="agents.dev.initial_state",
    model_tokens=False,  # its messages are whole node outputs
))
register(Agent(
    name="showcase",
    version="1",
    description="One interrupt of every interaction kind: input, select, multiSelect, modal, "
                "unlock, review (edit validated against a schema) and approval.",
    input_model=ShowcaseInput,
    builder="agents.showcase.build",
    initial_state="agents.showcase.initial_state",
    model_tokens=False,  # its messages are whole node outputs
))
register(Agent(
    name="approvals",
    version="1",
    description="Two sign-offs (legal, security) asked in parallel; completed only if both "
                "approve. Shows several pending interrupts, answered separately or together.",
    input_model=ApprovalsInput,
    builder="agents.approvals.build",
    initial_state="agents.approvals.initial_state",
    model_tokens=False,  # its messages are whole node outputs
))
register(Agent(
    name="tasklist",
    version="1",
    description="Splits a version plan (docs://versions/<name>.md) into a tasklist: strategy "
                "review (approve / edit / reject / respond), revision review only when the "
                "draft needs it, at most two revision rounds; blocked on a thin plan.",
    input_model=TasklistInput,
    builder="agents.tasklist.build",
    initial_state="agents.tasklist.initial_state",
))
register(Agent(
    name="assistant",
    version="1",
    description="Help-center assistant (the seed's reactAgent): searches a small knowledge "
                "base and asks when a request is vague (input), fits several topics (choice), "
                "wants several (multi choice) or is irreversible (confirm); filing a ticket "
                "needs approval (approve / edit / reject).",
    input_model=AssistantInput,
    builder="agents.assistant.build",
    initial_state="agents.assistant.initial_state",
))
register(Agent(
    name="stock",
    version="1",
    description="Stock lookup (the seed's tushare graph) over a shipped table of listed "
                "companies: asks for a name when none is given (ask_input), asks which one "
                "when several match (ask_choice), then answers from the data.",
    input_model=StockInput,
    builder="agents.stock.build",
    initial_state="agents.stock.initial_state",
))

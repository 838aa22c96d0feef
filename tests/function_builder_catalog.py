"""An agent catalog with the mistake adopters make: ``builder`` given the function
itself, not its dotted path (tests/unit/test_builder_path.py loads it in ``manage.py
check``)."""

from __future__ import annotations

from pydantic import BaseModel

from runs.registry import Agent, register


def build() -> None:
    """Stands for a graph factory (never called)."""


class NoInput(BaseModel):
    pass


register(Agent(name="mailer", version="1", description="builder given as a function",
               input_model=NoInput, builder=build,  # type: ignore[arg-type]
               initial_state="tests.adopter_agents.messages_state"))

"""The provider adopter agent's graph (registered in tests/providers/catalog.py): the
same create_agent + HumanInTheLoopMiddleware agent as tests/adopter_agents.py, with the
configured chat model (AGENT_MODEL, our fake provider in these tests) instead of a
scripted one. Imported only by the worker.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware

from agents.chat_model import get_chat_model
from tests.adopter_agents import INTERRUPT_ON, delete_file, send_email


def adopter_build() -> Any:
    return create_agent(get_chat_model(), tools=[send_email, delete_file],
                        middleware=[HumanInTheLoopMiddleware(interrupt_on=INTERRUPT_ON)])

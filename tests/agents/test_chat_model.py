"""The chat model switch and the offline model: streaming, tool calling, structured output."""

from __future__ import annotations

import importlib.util

import pytest
from django.core.exceptions import ImproperlyConfigured
from langchain_core.messages import AIMessageChunk, HumanMessage, SystemMessage
from pydantic import BaseModel

from agents.chat_model import OfflineChatModel, get_chat_model, model_name, offline_skill


def test_without_agent_model_the_offline_model_serves(settings):
    settings.AGENT_MODEL = ""
    assert model_name() == "offline"
    assert isinstance(get_chat_model(), OfflineChatModel)
    settings.AGENT_MODEL = "  "
    assert model_name() == "offline"


@pytest.mark.skipif(importlib.util.find_spec("langchain_openai") is not None,
                    reason="the openai extra is installed here")
def test_a_provider_without_its_package_names_the_extra(settings):
    settings.AGENT_MODEL = "openai:gpt-4o-mini"
    with pytest.raises(ImproperlyConfigured, match=r"pip install -e '\.\[openai\]'"):
        get_chat_model()


def test_unknown_provider_is_a_configuration_error(settings):
    settings.AGENT_MODEL = "nosuchprovider:model"
    with pytest.raises(ImproperlyConfigured, match="nosuchprovider"):
        get_chat_model()


def test_offline_model_streams_text_word_by_word():
    chunks = [c for c in OfflineChatModel().stream([HumanMessage("hello there, model")])
              if c.content]
    assert [c.content for c in chunks] == ["hello ", "there, ", "model"]
    assert "".join(c.content for c in chunks) == "hello there, model"


def test_offline_model_calls_tools_and_streams_the_call():
    from agents import assistant_offline  # noqa: F401 - the assistant's offline policy
    from agents.knowledge import kb_search
    from hitl.ask_tools import ASK_TOOLS

    model = OfflineChatModel().bind_tools([*ASK_TOOLS, kb_search])
    system = SystemMessage("Knowledge base topics:\n- Password reset\n- Two-factor reset\n")
    reply = model.invoke([system, HumanMessage("reset?")])
    assert reply.tool_calls[0]["name"] == "ask_choice"
    assert reply.tool_calls[0]["args"]["options"] == ["Password reset", "Two-factor reset"]
    chunks = list(model.stream([system, HumanMessage("how long is a password reset link valid")]))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    call = next(c for c in chunks if c.tool_call_chunks).tool_call_chunks[0]
    assert call["name"] == "kb_search" and '"Password reset"' in call["args"]


class Weather(BaseModel):
    city: str
    degrees: int


def test_structured_output_uses_the_registered_offline_skill():
    offline_skill("Weather")(lambda messages: {"city": str(messages[-1].content),
                                               "degrees": 21})
    result = OfflineChatModel().with_structured_output(Weather).invoke("Oslo")
    assert result == Weather(city="Oslo", degrees=21)

    class Unknown(BaseModel):
        x: int

    with pytest.raises(ValueError, match="no skill for 'Unknown'"):
        OfflineChatModel().with_structured_output(Unknown).invoke("x")


@pytest.mark.django_db(transaction=True)
def test_agents_endpoint_says_which_model_serves(api):
    agents = {a["name"]: a for a in api("owner").get("/api/agents/").json()}
    assert {"tasklist", "assistant", "stock"} <= set(agents)
    for agent in agents.values():
        assert agent["model"] == "offline" and agent["offline_model"] is True
    assert "docs://versions/" in str(agents["tasklist"]["input_schema"]["properties"]["doc"])

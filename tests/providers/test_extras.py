"""The Anthropic and Ollama extras: the product's chat model (agents.chat_model, through
LangChain's init_chat_model) constructs for ``anthropic:...`` and ``ollama:...`` and
streams text with usage from a local stand-in (the fake server's Anthropic Messages SSE
and Ollama NDJSON endpoints), its base URL given as an adopter gives it: the providers'
own environment variables. In-process, no worker."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from agents.chat_model import get_chat_model
from tests.providers.fake_openai import Reply


@pytest.fixture
def chat_model(settings, monkeypatch, provider):
    def make(name: str, **env: str):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        settings.AGENT_MODEL = name
        return get_chat_model()

    return make


def streamed(model, text: str) -> tuple[list, object]:
    chunks = list(model.stream([HumanMessage(text)]))
    message = chunks[0]
    for chunk in chunks[1:]:
        message += chunk
    return chunks, message


def test_anthropic_constructs_and_streams(chat_model, provider):
    model = chat_model("anthropic:claude-sonnet-4-5", ANTHROPIC_API_KEY="test",
                       ANTHROPIC_BASE_URL=provider.root_url)
    assert type(model).__name__ == "ChatAnthropic"
    provider.script(Reply(text="Hello from the stand-in"))
    chunks, message = streamed(model, "hi")
    assert message.text == "Hello from the stand-in"
    assert sum(1 for c in chunks if c.text) == 4  # word by word
    [request] = provider.requests("/v1/messages")
    assert request.body["model"] == "claude-sonnet-4-5" and request.body["stream"] is True
    # The key as x-api-key (1.x SDKs) or a bearer token (2.x).
    key = request.headers.get("x-api-key") or request.headers["authorization"]
    assert key.removeprefix("Bearer ") == "test"
    assert message.usage_metadata["input_tokens"] == request.usage["input_tokens"]
    assert message.usage_metadata["output_tokens"] == request.usage["output_tokens"]


def test_ollama_constructs_and_streams(chat_model, provider):
    model = chat_model("ollama:llama3.1", OLLAMA_HOST=provider.root_url)
    assert type(model).__name__ == "ChatOllama"
    provider.script(Reply(text="Hello from the stand-in"))
    chunks, message = streamed(model, "hi")
    assert message.text == "Hello from the stand-in"
    assert sum(1 for c in chunks if c.text) == 4
    [request] = provider.requests("/api/chat")
    assert request.body["model"] == "llama3.1" and request.body.get("stream", True) is True
    assert message.usage_metadata["input_tokens"] == request.usage["prompt_eval_count"]
    assert message.usage_metadata["output_tokens"] == request.usage["eval_count"]

"""The chat model the agents use: a real provider chosen by ``AGENT_MODEL``, or the offline one.

``AGENT_MODEL`` takes LangChain ``init_chat_model`` strings (``openai:gpt-4o-mini``,
``anthropic:claude-sonnet-4-5``, ``ollama:llama3.1``); the provider package comes from the
matching optional extra (``pip install -e '.[openai]'``). Without ``AGENT_MODEL`` the
built-in :class:`OfflineChatModel` serves: deterministic, streaming, tool calling, no
network — so every agent works out of the box and in tests.

The offline model is a small rule engine, not a language model:
- a forced single tool (``with_structured_output``) is answered by an *offline skill*
  registered under the schema's name by the agent that uses it (``offline_skill``);
- a call whose system prompt was registered with ``offline_reply`` is answered by that
  function (plain text, streamed);
- otherwise, with tools bound, the *offline tool policy* registered for one of those
  tools decides the next step (``offline_tools_policy``; the ``assistant`` agent
  registers one);
- otherwise it echoes the context it was given.

It knows no agent by name: agents teach it what they need.
"""

from __future__ import annotations

import functools
import json
import os
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    SystemMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from agentsite.outbound import (
    AsyncOutboundTransport,
    OutboundTransport,
    check_url,
    outbound_async_client,
    outbound_client,
)
from execution.calls import AbortableTransport
from observability.model_http import CountedTransport
from runs import registry

OFFLINE_NAME = registry.OFFLINE_MODEL
model_name = registry.model_name

# Provider prefix of AGENT_MODEL → the extra that installs its LangChain package.
PROVIDER_EXTRAS = {"openai": "openai", "anthropic": "anthropic", "ollama": "ollama"}

Skill = Callable[[list[BaseMessage]], Any]
ToolPolicy = Callable[[list[BaseMessage], list[str]], AIMessage]
_skills: dict[str, Skill] = {}
_replies: dict[str, Skill] = {}
_tool_policies: dict[str, ToolPolicy] = {}


def offline_skill(name: str) -> Callable[[Skill], Skill]:
    """Teach the offline model a structured-output task: ``name`` is the schema's name;
    the skill returns the schema's arguments as a dict."""

    def deco(fn: Skill) -> Skill:
        _skills[name] = fn
        return fn

    return deco


def offline_reply(system_prompt: str) -> Callable[[Skill], Skill]:
    """Teach the offline model a free-text task: calls whose first message is this
    system prompt are answered by the function (it returns the reply text)."""

    def deco(fn: Skill) -> Skill:
        _replies[system_prompt.strip()] = fn
        return fn

    return deco


def offline_tools_policy(tool: str) -> Callable[[ToolPolicy], ToolPolicy]:
    """Teach the offline model a tool-calling task: when ``tool`` is among the bound
    tools, the function decides the next reply from the messages and the bound tool
    names (a text answer, or tool calls: see ``tool_call``)."""

    def deco(fn: ToolPolicy) -> ToolPolicy:
        _tool_policies[tool] = fn
        return fn

    return deco


def is_offline() -> bool:
    return model_name() == OFFLINE_NAME


def get_chat_model() -> BaseChatModel:
    """The configured chat model (one client per process and AGENT_MODEL value)."""
    name = model_name()
    if name == OFFLINE_NAME:
        return OfflineChatModel()
    return _provider_model(name)


@functools.lru_cache(maxsize=4)
def _provider_model(name: str) -> BaseChatModel:
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:  # pragma: no cover - langchain is a core dependency
        raise ImproperlyConfigured("AGENT_MODEL needs the 'langchain' package") from exc
    provider = name.split(":", 1)[0] if ":" in name else ""
    try:
        return init_chat_model(name, **provider_options(provider))
    except ImportError as exc:
        extra = PROVIDER_EXTRAS.get(provider, provider or "<provider>")
        raise ImproperlyConfigured(
            f"AGENT_MODEL={name!r} needs its provider package: "
            f"pip install -e '.[{extra}]' ({exc})") from exc
    except ValueError as exc:
        raise ImproperlyConfigured(f"AGENT_MODEL={name!r} is not usable: {exc}") from exc


def provider_options(provider: str) -> dict[str, Any]:
    """The chat model's timeout and SDK retries (MODEL_TIMEOUT_SECONDS,
    MODEL_MAX_RETRIES), and token usage in streams, in each provider's own terms."""
    timeout, retries = settings.MODEL_TIMEOUT_SECONDS, settings.MODEL_MAX_RETRIES
    # The base URL may not reach internal addresses unless OUTBOUND_ALLOW names them
    # (agentsite.outbound): checked at each request where the SDK takes an httpx client
    # or transport, else (Anthropic's) once, when the model is made.
    if provider == "ollama":  # no retries of its own; httpx's timeout
        return {"client_kwargs": {"timeout": timeout},
                "sync_client_kwargs": {"transport": OutboundTransport()},
                "async_client_kwargs": {"transport": AsyncOutboundTransport()}}
    options: dict[str, Any] = {"timeout": timeout, "max_retries": retries}
    if provider in ("openai", "azure_openai"):
        # Connections a cancel cuts (execution.calls): a cancelled run's call ends at once;
        # each request checked first (agentsite.outbound).
        # Every attempt counted, the SDK's retries too (observability.model_http).
        options.update(http_client=outbound_client(CountedTransport(AbortableTransport()),
                                                   timeout=timeout),
                       http_async_client=outbound_async_client(timeout=timeout))
    if provider == "anthropic":
        check_url(os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com")
    if provider in ("openai", "anthropic", "azure_openai"):
        # OpenAI-compatible bases report usage in a stream only when asked.
        options["stream_usage"] = True
    return options


# --- the offline model ---------------------------------------------------------------

class OfflineChatModel(BaseChatModel):
    """Deterministic chat model: streams word by word, calls tools, no network."""

    @property
    def _llm_type(self) -> str:
        return "agentsite-offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": OFFLINE_NAME}

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        tools = kwargs.get("tools") or []
        names = [t["function"]["name"] for t in tools]
        forced = kwargs.get("tool_choice") not in (None, "auto", "none")
        if forced and len(names) == 1:
            skill = _skills.get(names[0])
            if skill is None:
                raise ValueError(f"the offline model has no skill for {names[0]!r}; "
                                 "register one with agents.chat_model.offline_skill")
            return AIMessage(content="", tool_calls=[
                {"name": names[0], "args": skill(messages), "id": _call_id()}])
        system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
        reply = _replies.get(str(system.content).strip()) if system is not None else None
        if reply is not None:
            return AIMessage(content=str(reply(messages)))
        policy = next((_tool_policies[n] for n in names if n in _tool_policies), None)
        if policy is not None:
            return policy(messages, names)
        last = messages[-1] if messages else None
        return AIMessage(content=str(getattr(last, "content", "")) or "Okay.")

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(
            message=self._reply(messages, kwargs))])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages, kwargs)
        text = str(reply.content)
        for piece in re.findall(r"\S+\s*|\s+", text):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        for index, call in enumerate(reply.tool_calls):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[
                {"name": call["name"], "args": json.dumps(call["args"]), "id": call["id"],
                 "index": index}]))
            if run_manager:
                run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def tool_call(name: str, **args: Any) -> AIMessage:
    """A reply that calls one tool (for offline tool policies)."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": _call_id()}])

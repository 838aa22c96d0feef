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
- otherwise, with tools bound, it follows :func:`_react_policy` (ask when the request
  is ambiguous, search the knowledge base, answer from the results);
- otherwise it echoes the context it was given.
"""

from __future__ import annotations

import functools
import json
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
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

OFFLINE_NAME = "offline"

# Provider prefix of AGENT_MODEL → the extra that installs its LangChain package.
PROVIDER_EXTRAS = {"openai": "openai", "anthropic": "anthropic", "ollama": "ollama"}

Skill = Callable[[list[BaseMessage]], Any]
_skills: dict[str, Skill] = {}
_replies: dict[str, Skill] = {}


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


def model_name() -> str:
    """What serves the agents: the AGENT_MODEL string, or ``offline``."""
    return (getattr(settings, "AGENT_MODEL", "") or "").strip() or OFFLINE_NAME


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
        return init_chat_model(name)
    except ImportError as exc:
        extra = PROVIDER_EXTRAS.get(provider, provider or "<provider>")
        raise ImproperlyConfigured(
            f"AGENT_MODEL={name!r} needs its provider package: "
            f"pip install -e '.[{extra}]' ({exc})") from exc
    except ValueError as exc:
        raise ImproperlyConfigured(f"AGENT_MODEL={name!r} is not usable: {exc}") from exc


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
                                 "register one with runs.chat_model.offline_skill")
            return AIMessage(content="", tool_calls=[
                {"name": names[0], "args": skill(messages), "id": _call_id()}])
        system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
        reply = _replies.get(str(system.content).strip()) if system is not None else None
        if reply is not None:
            return AIMessage(content=str(reply(messages)))
        if names:
            return _react_policy(messages, names)
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


def _call(name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": _call_id()}])


# --- offline tool-calling policy (the assistant agent) ---------------------------------

STOPWORDS = set("""a an and are as at be can do does for from how i in is it me my of on
or please the to what when where which who why with you your about tell show give""".split())
DESTRUCTIVE = ("delete", "remove", "erase", "close my account", "wipe")
MANY = ("compare", "several", "topics", "overview", "all about")


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS]


def _topics(messages: list[BaseMessage]) -> list[str]:
    """Topics listed in the system prompt under a 'Knowledge base topics:' line."""
    for m in messages:
        if isinstance(m, SystemMessage):
            text = str(m.content)
            if "Knowledge base topics:" in text:
                block = text.split("Knowledge base topics:", 1)[1]
                return [line.strip()[2:].strip() for line in block.splitlines()
                        if line.strip().startswith("- ")]
    return []


def _matching_topics(text: str, topics: list[str]) -> list[str]:
    words = set(_words(text))
    scored = [(len(words & set(_words(t))), t) for t in topics]
    best = max((s for s, _ in scored), default=0)
    return [t for s, t in scored if best and s == best]


def _answer_value(content: str) -> str:
    return content.split(":", 1)[1].strip() if ":" in content else content.strip()


def _kb_answer(results: list[ToolMessage]) -> str:
    hits: list[dict[str, Any]] = []
    for message in results:
        try:
            hits += json.loads(str(message.content))
        except (TypeError, ValueError):
            continue
    if not hits:
        return "I couldn't find anything about that in the knowledge base."
    seen, lines = set(), []
    for hit in hits:
        if hit["title"] in seen:
            continue
        seen.add(hit["title"])
        lines.append(f"**{hit['title']}**: {hit['text']}")
    return "Here is what the knowledge base says:\n\n" + "\n\n".join(lines)


def _react_policy(messages: list[BaseMessage], tools: list[str]) -> AIMessage:
    """Decide the next step of a tool-calling agent from the conversation so far."""
    topics = _topics(messages)
    request = next((str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage)),
                   "")
    # Tool results since the last AI turn that called tools.
    trailing: list[ToolMessage] = []
    for m in reversed(messages):
        if not isinstance(m, ToolMessage):
            break
        trailing.insert(0, m)
    if trailing:
        names = {m.name for m in trailing}
        if "kb_search" in names:
            return AIMessage(content=_kb_answer([m for m in trailing if m.name == "kb_search"]))
        last = trailing[-1]
        answer = _answer_value(str(last.content))
        if last.name == "ask_confirm":
            if answer.lower() in {"proceed", "yes", "confirm"}:
                return _search_or_ask(request, topics, tools, confirmed=True)
            return AIMessage(content="Okay, I stopped there: nothing was changed.")
        if last.name == "ask_multi_choice":
            chosen = [v.strip() for v in answer.split(",") if v.strip()]
            return AIMessage(content="", tool_calls=[
                {"name": "kb_search", "args": {"query": topic}, "id": _call_id()}
                for topic in chosen])
        if last.name in {"ask_choice", "ask_input"}:
            if "kb_search" in tools:
                return _call("kb_search", query=answer)
        if last.status == "error" or "rejected" in str(last.content).lower():
            return AIMessage(content=f"Understood, I did not do that. ({last.content})")
        return AIMessage(content=f"Done: {last.content}")
    return _search_or_ask(request, topics, tools)


def _search_or_ask(request: str, topics: list[str], tools: list[str],
                   confirmed: bool = False) -> AIMessage:
    text = request.lower()
    if "ticket" in text and "file_ticket" in tools:
        priority = "high" if ("urgent" in text or "asap" in text) else "normal"
        title = re.sub(r"(?i)^(please\s+)?(file|open|create)\s+a\s+ticket\s*(about|for|:)?\s*",
                       "", request).strip() or request.strip()
        return _call("file_ticket", title=title[:120], priority=priority)
    matches = _matching_topics(request, topics)
    vague = not _words(request) or (len(_words(request)) < 2 and not matches)
    if vague and "ask_input" in tools:
        return _call("ask_input", question="What would you like to know? Name a topic or "
                                           "describe the problem in a few words.")
    if (not confirmed and "ask_confirm" in tools
            and any(word in text for word in DESTRUCTIVE)):
        return _call("ask_confirm",
                     question="This is about an irreversible action. Shall I look up how to "
                              "do it?",
                     options=["proceed", "cancel"])
    if any(word in text for word in MANY) and "ask_multi_choice" in tools and topics:
        return _call("ask_multi_choice", question="Which topics should I cover?",
                     options=topics)
    if len(matches) > 1 and "ask_choice" in tools:
        return _call("ask_choice", question="Which one do you mean?", options=matches)
    if "kb_search" in tools:
        return _call("kb_search", query=matches[0] if matches else request)
    return AIMessage(content="I can't help with that here.")


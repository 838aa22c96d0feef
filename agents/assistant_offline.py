"""The ``assistant`` agent's behaviour on the offline model (no AGENT_MODEL): a small
rule engine that asks when a request is vague, ambiguous, wide or irreversible,
searches the knowledge base, and answers from the results.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from agents.chat_model import offline_tools_policy, tool_call

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


@offline_tools_policy("kb_search")
def react_policy(messages: list[BaseMessage], tools: list[str]) -> AIMessage:
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
            calls = [tool_call("kb_search", query=topic).tool_calls[0] for topic in chosen]
            return AIMessage(content="", tool_calls=calls)
        if last.name in {"ask_choice", "ask_input"}:
            if "kb_search" in tools:
                return tool_call("kb_search", query=answer)
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
        return tool_call("file_ticket", title=title[:120], priority=priority)
    matches = _matching_topics(request, topics)
    vague = not _words(request) or (len(_words(request)) < 2 and not matches)
    if vague and "ask_input" in tools:
        return tool_call("ask_input", question="What would you like to know? Name a topic or "
                                           "describe the problem in a few words.")
    if (not confirmed and "ask_confirm" in tools
            and any(word in text for word in DESTRUCTIVE)):
        return tool_call("ask_confirm",
                     question="This is about an irreversible action. Shall I look up how to "
                              "do it?",
                     options=["proceed", "cancel"])
    if any(word in text for word in MANY) and "ask_multi_choice" in tools and topics:
        return tool_call("ask_multi_choice", question="Which topics should I cover?",
                     options=topics)
    if len(matches) > 1 and "ask_choice" in tools:
        return tool_call("ask_choice", question="Which one do you mean?", options=matches)
    if "kb_search" in tools:
        return tool_call("kb_search", query=matches[0] if matches else request)
    return AIMessage(content="I can't help with that here.")


"""The small knowledge base the assistant searches, and the ``kb_search`` tool."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from langchain_core.tools import tool

DATA = Path(__file__).resolve().parent / "data"


@cache
def articles() -> list[dict[str, Any]]:
    return json.loads((DATA / "knowledge_base.json").read_text(encoding="utf-8"))


def topics() -> list[str]:
    return [a["title"] for a in articles()]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)?", text.lower()))


def search(query: str) -> list[dict[str, str]]:
    """Articles that share the most words with the query (title and tags count double)."""
    words = _words(query)
    scored = []
    for a in articles():
        key = _words(a["title"]) | _words(" ".join(a["tags"]))
        score = 2 * len(words & key) + len(words & _words(a["text"]))
        if score:
            scored.append((score, a))
    best = max((s for s, _ in scored), default=0)
    return [{"title": a["title"], "text": a["text"]} for s, a in scored if s == best]


@tool
def kb_search(query: str) -> str:
    """Search the help-center knowledge base; returns matching articles as JSON."""
    return json.dumps(search(query), ensure_ascii=False)

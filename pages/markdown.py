"""Agent text as HTML, safely: markdown-it-py with raw HTML off and its link validation on.

``html=False`` escapes any HTML in the text; markdown-it's ``validateLink`` refuses
``javascript:``, ``vbscript:``, ``file:`` and (non-image) ``data:`` URLs, so such a link is
left as plain text.
"""

from __future__ import annotations

from functools import lru_cache

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


@lru_cache(maxsize=4096)  # finished messages never change; rendering costs ~0.4 ms each
def render_markdown(text: str) -> SafeString:
    return mark_safe(_parser().render(text or ""))  # noqa: S308 - html=False escapes input

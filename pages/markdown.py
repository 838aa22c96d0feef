"""Agent text as HTML, safely: markdown-it-py with raw HTML off and its link validation on.

``html=False`` escapes any HTML in the text; markdown-it's ``validateLink`` refuses
``javascript:``, ``vbscript:``, ``file:`` and (non-image) ``data:`` URLs, so such a link is
left as plain text.

One-line text (a question's title, a queue row) gets the inline part only
(``render_inline``: code spans, bold, italics; no links, images or blocks), or the plain
words with the marks removed (``plain_inline``: a page title, a breadcrumb).
"""

from __future__ import annotations

import html
from functools import lru_cache

from django.utils.html import strip_tags
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


@lru_cache(maxsize=4096)  # finished messages never change; rendering costs ~0.4 ms each
def render_markdown(text: str) -> SafeString:
    return mark_safe(_parser().render(text or ""))  # noqa: S308 - html=False escapes input


@lru_cache(maxsize=1)
def _inline_parser() -> MarkdownIt:
    return MarkdownIt("zero", {"html": False}).enable(["backticks", "emphasis", "escape"])


@lru_cache(maxsize=4096)
def render_inline(text: str) -> SafeString:
    """``**bold**`` and `` `code` `` in one line of text, as HTML (everything else escaped)."""
    return mark_safe(_inline_parser().renderInline(text or ""))  # noqa: S308 - html=False


def plain_inline(text: str) -> str:
    """The words of ``text`` without its inline marks (not escaped: the template does)."""
    return html.unescape(strip_tags(render_inline(text)))

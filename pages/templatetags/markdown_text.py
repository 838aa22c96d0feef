"""Template filters for agent text on one line (``pages.markdown``): a question's title, a
queue row, a conversation's messages in the admin. Loaded by the shared card templates
(``templates/hitl/cards/``) and the admin's."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from pages.markdown import plain_inline, render_inline, render_markdown

register = template.Library()


@register.filter
def inline_markdown(text: str) -> SafeString:
    return render_inline(str(text or ""))


@register.filter
def plain_markdown(text: str) -> str:
    return plain_inline(str(text or ""))


@register.filter
def markdown(text: str) -> SafeString:
    return render_markdown(str(text or ""))

"""Writes for documents and tickets."""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction

from agentsite.errors import InvalidInput, NotFound
from workspace.models import Document, Ticket

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,115}\.md$")
MAX_DOCUMENT_CHARS = 200_000


def document_upload(*, owner: Any, name: str, content: str) -> Document:
    """Create or replace the owner's document ``name`` (a markdown version plan)."""
    if not NAME_RE.match(name or ""):
        raise InvalidInput("invalid document name", fields={
            "name": ["letters, digits, '.', '_' or '-', ending in .md (e.g. v2.1.md)"]})
    if not (content or "").strip():
        raise InvalidInput("empty document", fields={"content": ["must not be empty"]})
    if "\x00" in content:
        raise InvalidInput("invalid document", fields={"content": ["must not contain NUL"]})
    if len(content) > MAX_DOCUMENT_CHARS:
        raise InvalidInput("document too long",
                           fields={"content": [f"at most {MAX_DOCUMENT_CHARS} characters"]})
    with transaction.atomic():
        doc, _ = Document.objects.update_or_create(owner=owner, name=name,
                                                   defaults={"content": content})
    return doc


def document_read(*, owner_id: int, name: str) -> str:
    doc = Document.objects.filter(owner_id=owner_id, name=name).first()
    if doc is None:
        raise NotFound(f"no uploaded document {name!r}", code="unknown_document")
    return doc.content


def ticket_file(*, thread_id: str, title: str, priority: str) -> Ticket:
    if priority not in Ticket.Priority.values:
        raise InvalidInput("invalid priority", fields={"priority": list(Ticket.Priority.values)})
    return Ticket.objects.create(thread_id=thread_id, title=title[:200], priority=priority)

"""What the shipped agents read and write outside the graph.

- Document: a version plan a user uploads for the tasklist agent
  (``docs://uploads/<name>``), private to its owner.
- Ticket: what the assistant's ``file_ticket`` tool creates — the side effect that
  tool approval guards (a rejected call leaves no row).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Document(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="documents")
    name = models.CharField(max_length=120, help_text="file name, e.g. v2.1.md")
    content = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"],
                                               name="document_unique_name_per_owner")]

    def __str__(self) -> str:
        return self.ref

    @property
    def ref(self) -> str:
        return f"docs://uploads/{self.name}"


class Ticket(models.Model):
    class Priority(models.TextChoices):
        LOW = "low"
        NORMAL = "normal"
        HIGH = "high"

    # The conversation (LangGraph thread) whose agent filed it.
    thread_id = models.UUIDField(db_index=True)
    title = models.CharField(max_length=200)
    priority = models.CharField(max_length=10, choices=Priority.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"[{self.priority}] {self.title}"

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from runs.models import AgentRun


class AgentInterrupt(models.Model):
    """One pending question of a paused run, keyed by LangGraph's interrupt id."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DECIDED = "decided"
        APPLIED = "applied"
        CANCELLED = "cancelled"
        EXPIRED = "expired"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="interrupts")
    interrupt_id = models.CharField(max_length=64, help_text="LangGraph interrupt id")
    kind = models.CharField(max_length=20)
    request = models.JSONField(help_text="the payload the graph passed to interrupt()")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING,
                              db_index=True)
    decision = models.JSONField(null=True, blank=True, help_text="the resume payload")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    # Set when a worker has fed the decision into Command(resume=...) successfully.
    applied_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "interrupt_id"], name="one_row_per_interrupt"),
        ]
        permissions = [("decide_interrupt", "Can decide interrupts of other users' runs")]

    def __str__(self) -> str:
        return f"{self.kind} interrupt {self.interrupt_id} ({self.status})"

    @property
    def message(self) -> str:
        return str(self.request.get("message") or self.request.get("title") or "")

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils import timezone

from agentsite.fields import VerbatimJSONField
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
    kind = models.CharField(max_length=40, help_text="its format (hitl.formats)")
    # Nullable: ``interrupt(None)`` is stored as SQL NULL and reads back as None. Both as
    # the graph gave them, keys in its order (not jsonb's).
    request = VerbatimJSONField(null=True,
                                help_text="the value the graph passed to interrupt(), verbatim")
    response_schema = VerbatimJSONField(
        null=True, blank=True,
        help_text="the Interrupt's response_schema (JSON Schema), when the graph gave one")
    # A batched HITLRequest names its tools but carries no argument schema: the worker,
    # which has the graph's tools, stores them here so that edits are checked (and edit
    # forms built) before anything is committed.
    args_schemas = models.JSONField(
        null=True, blank=True,
        help_text="JSON Schema of the arguments of each tool the question is about, by "
                  "tool name, from the graph's tools (null: none known)")
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

    # --- who may decide, and by when (hitl.policies; set when the row is opened) ---
    # With any assignee (user or group) only they decide, or a user with
    # hitl.override_assignment.
    assignees = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="+")
    assigned_groups = models.ManyToManyField(Group, blank=True, related_name="+")
    # Four-eyes: False stops the run's owner from answering.
    requester_may_decide = models.BooleanField(default=True)
    # Quorum (approval / review): distinct approvers needed; votes in InterruptVote.
    required_approvals = models.PositiveSmallIntegerField(default=1)
    reject_policy = models.CharField(
        max_length=20, default="any",
        help_text="any: one rejection rejects; quorum: as many rejections as approvals needed")
    # The answer the run resumes with when the deadline passes (null: the run expires).
    default_answer = models.JSONField(null=True, blank=True)
    escalate_at = models.DateTimeField(null=True, blank=True)
    escalate_to = models.JSONField(default=list, blank=True, help_text="group names")
    escalated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "interrupt_id"], name="one_row_per_interrupt"),
        ]
        indexes = [
            # The Insights page's range scans read this alone (an index-only scan), not
            # the rows with their questions (observability.insights).
            models.Index(fields=["created_at"], name="interrupt_insights",
                         include=["run", "kind", "status", "decided_at", "decided_by",
                                  "expires_at", "escalate_at", "escalated_at"]),
        ]
        permissions = [("decide_interrupt", "Can decide interrupts of other users' runs"),
                       ("override_assignment",
                        "Can decide interrupts assigned to other users or groups")]

    def __str__(self) -> str:
        return f"{self.kind} interrupt {self.interrupt_id} ({self.status})"

    @property
    def format(self) -> Any:
        """Its ``hitl.formats`` format, over the raw value as stored."""
        from hitl.formats import for_interrupt  # formats import hitl.kinds, not models

        return for_interrupt(self)

    @property
    def message(self) -> str:
        return self.format.message()


class InterruptVote(models.Model):
    """One user's vote on a quorum interrupt: at most one per user (a unique constraint,
    written under the run's lock)."""

    id = models.BigAutoField(primary_key=True)
    interrupt = models.ForeignKey(AgentInterrupt, on_delete=models.CASCADE, related_name="votes")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                             related_name="+")
    username = models.CharField(max_length=150, help_text="kept if the user goes")
    approved = models.BooleanField()
    reason = models.TextField(blank=True)
    payload = models.JSONField(null=True, blank=True)
    surface = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["interrupt", "user"],
                                               name="one_vote_per_user")]

    def __str__(self) -> str:
        return f"{self.username}: {'approve' if self.approved else 'reject'}"


class StandingApproval(models.Model):
    """An auto-approval rule a reviewer grants: the worker approves a matching interrupt
    when the run pauses (``hitl.policies.standing_match``)."""

    class Kind(models.TextChoices):
        APPROVAL = "approval"
        REVIEW = "review"
        TOOL = "tool", "tool approval"

    id = models.BigAutoField(primary_key=True)
    agent = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    tool_name = models.CharField(max_length=100, blank=True,
                                 help_text="for a tool approval: the tool whose calls it approves")
    args_match = models.JSONField(
        null=True, blank=True,
        help_text="optional: keys that must equal these values in the tool arguments, "
                  "review proposal or approval details")
    expires_at = models.DateTimeField(null=True, blank=True)
    granted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        what = f"tool {self.tool_name}" if self.kind == self.Kind.TOOL else self.kind
        return f"standing approval #{self.pk}: {self.agent} · {what}"


class AgentWebhook(models.Model):
    """Where an agent's notifications are POSTed (JSON, signed with HMAC-SHA256)."""

    id = models.BigAutoField(primary_key=True)
    agent = models.CharField(max_length=100, db_index=True)
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=200, help_text="HMAC-SHA256 key for the signature")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["agent", "id"]

    def __str__(self) -> str:
        return f"{self.agent} → {self.url}"


class Notification(models.Model):
    """The outbox: one notice owed (an interrupt opened or escalated, a run ended),
    written in the transaction that makes it due. The worker's ``hitl.notify`` task
    sends it (emails, and one ``WebhookDelivery`` per webhook) and marks it; if the
    broker was down at commit, the reaper (``execution.reaper``) sends the task again."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    id = models.BigAutoField(primary_key=True)
    event = models.CharField(max_length=40)
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="+")
    interrupt = models.ForeignKey(AgentInterrupt, null=True, blank=True,
                                  on_delete=models.CASCADE, related_name="+")
    groups = models.JSONField(default=list, blank=True, help_text="escalation group names")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    attempt_log = models.JSONField(default=list, blank=True,
                                   help_text="one entry per attempt: when, and what failed")
    last_error = models.TextField(blank=True)
    # When its task was last sent or is next due: still pending well after it, the task
    # was lost (broker down) and the reaper sends it again.
    due_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["due_at"], name="notification_owed",
                                condition=models.Q(status="pending"))]

    def __str__(self) -> str:
        return f"{self.event} of run {self.run_id} ({self.status})"


class WebhookDelivery(models.Model):
    """The delivery log: one row per event per webhook, updated by each attempt (and
    each attempt appended to ``attempt_log``)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    id = models.BigAutoField(primary_key=True)
    # An agent's webhook; or none, for a run's own (the LangGraph API's ``webhook``):
    # then ``url``, signed with RUN_WEBHOOK_SECRET when it is set.
    webhook = models.ForeignKey(AgentWebhook, on_delete=models.CASCADE, null=True,
                                blank=True, related_name="deliveries")
    url = models.URLField(max_length=500, blank=True)
    event = models.CharField(max_length=40)
    body = models.JSONField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.IntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    attempt_log = models.JSONField(default=list, blank=True,
                                   help_text="one entry per attempt: when, status code, error")
    # As Notification.due_at: the next attempt's time; pending well after it, its task
    # was lost and the reaper sends it again.
    due_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "webhook deliveries"
        indexes = [models.Index(fields=["due_at"], name="webhook_delivery_owed",
                                condition=models.Q(status="pending"))]

    def __str__(self) -> str:
        return f"{self.event} → {self.webhook.url} ({self.status})"

"""Business truth for runs: who owns a run, where it stands, what the user sees.

Graph state lives only in the LangGraph checkpoint tables; nothing here copies it.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Conversation(models.Model):
    """One chat thread; its id is the LangGraph thread id."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="conversations")
    agent = models.CharField(max_length=100)
    title = models.CharField(max_length=200, blank=True)
    # What a client attached to the thread (the LangGraph API's thread metadata: searched
    # by containment); never read by the engine.
    metadata = models.JSONField(default=dict, blank=True)
    # A fork's conversation: the run whose past answer it was forked from
    # (``execution.fork``); that run's ``forks`` lead back here.
    forked_from = models.ForeignKey("AgentRun", null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title or f"{self.agent} · {self.id}"

    @property
    def thread_id(self) -> str:
        return str(self.id)


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE,
                                     related_name="messages")
    run = models.ForeignKey("AgentRun", null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="messages")
    role = models.CharField(max_length=20, choices=Role.choices)
    # An assistant message is continued across pauses: each resumed segment appends.
    content = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"


class AgentRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        PAUSED = "paused"
        RESUMING = "resuming"
        COMPLETED = "completed"
        REJECTED = "rejected"
        BLOCKED = "blocked"
        FAILED = "failed"
        CANCELLED = "cancelled"
        # An interrupt's deadline passed with no default answer (hitl policies).
        EXPIRED = "expired"
        # The model provider failed transiently (or a person asked for a retry): the
        # segment goes on from its last checkpoint at ``retry_at`` (execution.retries).
        RETRYING = "retrying"
        # Started behind the thread's unfinished run (LangGraph's multitask_strategy
        # "enqueue"): queued once that run ends (``runs.queue``).
        WAITING = "waiting"

    # Unfinished and holding the thread: at most one per thread.
    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.PAUSED, Status.RESUMING, Status.RETRYING)
    # A worker owes or does work (or will, for a waiting run): it will still publish on
    # the run's channel.
    LIVE = (Status.QUEUED, Status.RUNNING, Status.RESUMING, Status.RETRYING, Status.WAITING)
    FINISHED = (Status.COMPLETED, Status.REJECTED, Status.BLOCKED, Status.FAILED,
                Status.CANCELLED, Status.EXPIRED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="agent_runs")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE,
                                     related_name="runs")
    agent = models.CharField(max_length=100)
    agent_version = models.CharField(max_length=50)
    thread_id = models.CharField(max_length=64, db_index=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED,
                              db_index=True)
    input = models.JSONField(default=dict, blank=True)
    # What the starting client attached to the run (LangGraph API run metadata).
    metadata = models.JSONField(default=dict, blank=True)
    # LangGraph stream modes the starting client asked for (``values``, ``updates``, …):
    # the worker streams them too and publishes each part on the run's channel, beside
    # the AG-UI events, for every segment of the run (``execution.stream_modes``).
    stream_modes = models.JSONField(default=list, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    assistant_message = models.ForeignKey(Message, null=True, blank=True,
                                          on_delete=models.SET_NULL, related_name="+")
    # How many graph segments a worker has executed (1 + number of resumes).
    segments = models.PositiveIntegerField(default=0)
    # The lease on a running segment (execution.lifecycle.run_claim): which claim holds it
    # and until when. Its worker renews it while alive; once it lapses the reaper
    # (execution.reaper) hands the segment to another worker.
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Ended, and its thread's checkpoint history seen to (execution.checkpoint_pruning).
    checkpoints_pruned = models.BooleanField(default=False)
    # What went wrong, technically (exception and provider answer), for the admin and a
    # disclosure; ``error`` holds the plain words a person reads. Only while ``retrying``
    # or ``failed`` (``runs.services.run_transition`` clears it when the run moves on).
    error_detail = models.TextField(blank=True)
    # Automatic retries after transient provider failures, counted against the run's
    # budget (MODEL_RUN_RETRIES); while ``retrying``, when the next attempt is due and why
    # (cleared when it leaves ``retrying``).
    retries = models.PositiveIntegerField(default=0)
    retry_at = models.DateTimeField(null=True, blank=True)
    retry_reason = models.CharField(max_length=200, blank=True)
    # How many times a person retried the run after it failed (``run_retry``): its
    # attempt is one more, so a failure that repeats reads "failed again (attempt 2)".
    manual_retries = models.PositiveIntegerField(default=0)
    # Token usage of all the run's segments (``SegmentUsage`` holds each one's).
    model_name = models.CharField(max_length=200, blank=True)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    total_tokens = models.PositiveBigIntegerField(default=0)
    # A fork (``execution.fork``): the run, the interrupt (LangGraph id) and the checkpoint
    # (of the original thread, where that interrupt was pending) its thread started from.
    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="forks")
    fork_interrupt_ref = models.CharField(max_length=64, blank=True)
    fork_checkpoint_id = models.CharField(max_length=64, blank=True)
    # Runs wait behind this one for its thread (``runs.queue``): its end queues the
    # oldest. A flag on the row, so the end of a run nobody waits for reads nothing more.
    runs_waiting = models.BooleanField(default=False)
    # The LangGraph API's per-run ``webhook``: the run is POSTed there when it ends
    # (``lgapi.webhook``, delivered as the site's webhooks are: ``hitl.notify``).
    webhook = models.URLField(max_length=500, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # The prune sweep's queue: ended runs not yet seen to, oldest first.
            models.Index(fields=["finished_at"], name="runs_checkpoints_to_prune",
                         condition=models.Q(finished_at__isnull=False,
                                            checkpoints_pruned=False)),
        ]
        constraints = [
            # At most one unfinished run per thread: a thread is one line of execution.
            models.UniqueConstraint(
                fields=["thread_id"],
                condition=models.Q(status__in=["queued", "running", "paused", "resuming",
                                                "retrying"]),
                name="one_active_run_per_thread",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.agent} run {self.id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def attempt(self) -> int:
        """1 for the run as started, then one more for each retry a person asked for."""
        return self.manual_retries + 1


class SegmentUsage(models.Model):
    """Tokens one segment's model calls used, as LangChain's usage metadata gave them."""

    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="usage")
    segment = models.PositiveIntegerField()
    model_name = models.CharField(max_length=200, blank=True)
    calls = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    total_tokens = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"run {self.run_id} segment {self.segment}: {self.total_tokens} tokens"


class AuditLog(models.Model):
    """Append-only record of every decision and status change."""

    class Action(models.TextChoices):
        RUN_STATUS = "run.status"
        INTERRUPT_STATUS = "interrupt.status"
        DECISION = "decision"
        # A new run forked from one of this run's past answers (``execution.fork``).
        FORKED = "forked"

    id = models.BigAutoField(primary_key=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.SET_NULL, related_name="+")
    actor_label = models.CharField(max_length=150, help_text="who acted, kept if the user goes")
    action = models.CharField(max_length=30, choices=Action.choices)
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="audit_log")
    # The interrupt's LangGraph id (no FK: hitl is the layer above runs).
    interrupt_ref = models.CharField(max_length=64, blank=True, db_index=True)
    # Where the actor acted: api, agui, page, admin; blank for the worker and the system.
    surface = models.CharField(max_length=20, blank=True)
    from_status = models.CharField(max_length=20, blank=True)
    to_status = models.CharField(max_length=20, blank=True)
    payload = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.action} {self.from_status}→{self.to_status} by {self.actor_label}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValueError("audit rows are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("audit rows are append-only")

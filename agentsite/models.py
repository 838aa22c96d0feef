"""Infrastructure tables of the API edge (no business data)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class IdempotencyKey(models.Model):
    """One ``Idempotency-Key`` of one user: who holds it now, and the answer once there is one.

    In Postgres (not Redis), written in the request's own transaction
    (``agentsite.idempotency``): a request whose change committed has its answer stored
    with it, and is replayed, never run again.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="+")
    key_hash = models.CharField(max_length=64)  # sha256 of the header value
    fingerprint = models.CharField(max_length=64)  # sha256 of method, path and body
    # A new value with each answer (read by nothing since keys are held by the request's
    # transaction; kept so that rows of the earlier scheme stay valid).
    token = models.UUIDField()
    # Null only on rows of the earlier scheme whose request never stored an answer.
    status = models.PositiveSmallIntegerField(null=True)
    body = models.JSONField(null=True)
    claimed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key_hash"],
                                               name="idempotency_key_per_user")]
        indexes = [models.Index(fields=["claimed_at"], name="idempotency_claimed_at")]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.key_hash[:12]}"

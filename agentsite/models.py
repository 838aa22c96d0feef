"""Infrastructure tables of the API edge (no business data)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class IdempotencyKey(models.Model):
    """One ``Idempotency-Key`` of one user: who holds it now, and the answer once there is one.

    In Postgres (not Redis) so that a request whose change committed is replayed, never run
    again, whatever happens to Redis.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="+")
    key_hash = models.CharField(max_length=64)  # sha256 of the header value
    fingerprint = models.CharField(max_length=64)  # sha256 of method, path and body
    # The request holding the key; the final store is a compare-and-set on it.
    token = models.UUIDField()
    status = models.PositiveSmallIntegerField(null=True)  # null: still in progress
    body = models.JSONField(null=True)
    claimed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key_hash"],
                                               name="idempotency_key_per_user")]
        indexes = [models.Index(fields=["claimed_at"], name="idempotency_claimed_at")]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.key_hash[:12]}"

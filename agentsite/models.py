"""Infrastructure tables of the API edge (no business data)."""

from __future__ import annotations

from typing import Any

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


class ApiToken(models.Model):
    """An API token: only its SHA-256 is stored (``agentsite.token_auth``). A user may hold
    several, each named, with scopes, an optional expiry and its last use. Revoked ones are
    kept (``revoked_at``), so that their use is told apart from a made-up token and audited.
    """

    class Scope(models.TextChoices):
        READ = "read", "read: runs, conversations, interrupts, streams"
        ANSWER = "answer", "answer: decide, resume, cancel, retry (and read)"
        START = "start", "start: start runs, upload documents (and read)"
        METRICS = "metrics", "metrics"
        ADMIN = "admin", "admin: everything the user may do"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100)
    # Space-separated scopes (OAuth's ``scope`` form), each one of Scope.
    scope = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True, editable=False)  # sha256 hex
    # The token's first characters, to recognise it in a list (not enough to use it).
    prefix = models.CharField(max_length=16, editable=False)
    # Copied from a DRF authtoken key of the earlier scheme (it keeps working, hashed).
    legacy = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "-created_at"], name="api_token_user")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def scopes(self) -> list[str]:
        return self.scope.split()

    def is_expired(self, now: Any = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired()


class SecurityEvent(models.Model):
    """Append-only record of security events: logins, lockouts, tokens, permission and
    group changes (``agentsite.security_audit``). Runs' own audit is ``runs.AuditLog``."""

    class Kind(models.TextChoices):
        LOGIN = "login", "login"
        LOGIN_FAILED = "login.failed", "login failed"
        LOCKOUT = "lockout", "locked out"
        UNLOCK = "unlock", "unlocked"
        LOGOUT = "logout", "logout"
        PASSWORD_RESET = "password_reset", "password reset asked"
        TOKEN_CREATED = "token.created", "token created"
        TOKEN_REVOKED = "token.revoked", "token revoked"
        TOKEN_REVOKED_USED = "token.revoked_used", "revoked token used"
        PERMISSIONS = "permissions", "permissions changed"
        GROUPS = "groups", "groups changed"
        STAFF = "staff", "staff / superuser / active changed"

    id = models.BigAutoField(primary_key=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True, editable=False)
    kind = models.CharField(max_length=30, choices=Kind.choices, db_index=True)
    # Whom it is about (null once that user is deleted; ``username`` keeps the name).
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    username = models.CharField(max_length=150, blank=True)
    # Who did it, when someone else did (an admin changing a user's groups).
    actor_label = models.CharField(max_length=150, blank=True)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.username}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValueError("security events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("security events are append-only")

"""Test users, made without hashing a password per user.

Django's PBKDF2 hasher takes ~0.2 s a password here (0.4 s on a busy machine), and the
role fixtures make three to seven users for each of hundreds of tests. Each password is
hashed once per session (``make_password``, a public API) and the same hash stored for
every user that has it: the web processes check it as they check any password.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password


@cache
def password_hash(raw: str) -> str:
    return make_password(raw)


def make_user(username: str, email: str = "", password: str | None = None,
              **fields: Any) -> Any:
    """``User.objects.create_user``'s arguments, with the password's hash from the cache
    (no password: an unusable one, as create_user makes)."""
    return get_user_model().objects.create(
        username=username, email=email,
        password=password_hash(password) if password is not None else make_password(None),
        **fields)


def make_superuser(username: str, email: str = "", password: str | None = None,
                   **fields: Any) -> Any:
    return make_user(username, email, password, is_staff=True, is_superuser=True, **fields)


def make_token(user: Any, scopes: str = "admin", name: str = "test", **fields: Any) -> str:
    """A new API token of ``user`` (every scope unless told), as a client sends it."""
    from agentsite.token_auth import token_issue

    return token_issue(user=user, name=name, scopes=scopes, **fields)[1]

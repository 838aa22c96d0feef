"""DRF's token authentication with its lookup compiled once (``agentsite.compiled``).

Every API and AG-UI request of a token client looks its token up. DRF builds that
statement (a token joined with its user) anew each time, which costs more Python than
the query takes; here the same join runs from SQL compiled the first time. Answers and
errors are DRF's: "Invalid token." for an unknown key, "User inactive or deleted." for
an inactive user, and ``request.auth`` is the token row.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import F
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from agentsite.compiled import Compiled

_USER_BY_TOKEN = Compiled(
    lambda key: get_user_model().objects.filter(auth_token__key=key)
    .annotate(token_created_at=F("auth_token__created")), key=str)


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``, as DRF's."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        user = _USER_BY_TOKEN.first(key=key)
        if user is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token = Token(key=key, user=user, created=user.__dict__.pop("token_created_at"))
        token._state.adding, token._state.db = False, user._state.db
        return user, token

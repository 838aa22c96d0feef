"""``manage.py issue_token USER --name N --scope S [--expires-in 30d]``: a new API token.

Printed once: only its hash is stored (``agentsite.token_auth``). ``--revoke ID`` revokes
one of the user's tokens; ``--list`` lists them.
"""

from __future__ import annotations

import re
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from agentsite.errors import ServiceError
from agentsite.models import ApiToken
from agentsite.token_auth import SCOPES, token_issue, token_revoke

_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def parse_duration(value: str) -> timedelta:
    match = re.fullmatch(r"\s*(\d+)\s*([mhd])\s*", value or "")
    if not match or int(match[1]) <= 0:
        raise CommandError(f"--expires-in {value!r}: give a number and m, h or d (30d)")
    return timedelta(**{_UNITS[match[2]]: int(match[1])})


class Command(BaseCommand):
    help = "Issue an API token for a user (printed once), or list / revoke the user's tokens."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="command line",
                            help="what the token is for (default: command line)")
        parser.add_argument("--scope", default="read",
                            help=f"scopes, comma- or space-separated: {', '.join(SCOPES)} "
                                 "(default: read)")
        parser.add_argument("--expires-in", dest="expires_in", default="",
                            help="e.g. 90d, 12h, 30m (default: never)")
        parser.add_argument("--list", action="store_true", help="list the user's tokens")
        parser.add_argument("--revoke", type=int, metavar="ID", help="revoke token ID")

    def handle(self, *args, username: str, name: str, scope: str, expires_in: str,
               list: bool, revoke: int | None, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        try:
            if list:
                for token in ApiToken.objects.filter(user=user):
                    state = ("revoked" if token.revoked_at else "expired"
                             if token.is_expired() else "active")
                    self.stdout.write(f"{token.pk}\t{token.prefix}…\t{token.name}\t"
                                      f"{token.scope}\t{state}\t"
                                      f"{'legacy' if token.legacy else ''}")
                return
            if revoke is not None:
                token_revoke(token_id=revoke, owner=user, actor=None)
                self.stdout.write(f"revoked token {revoke}")
                return
            expires_at = timezone.now() + parse_duration(expires_in) if expires_in else None
            _, raw = token_issue(user=user, name=name, scopes=scope, expires_at=expires_at)
        except ServiceError as err:
            raise CommandError(err.detail) from None
        self.stdout.write(raw)

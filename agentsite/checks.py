"""``check --deploy`` for Django's middleware as ``agentsite.loop_middleware`` subclasses it.

Django's security checks find its middleware by dotted name in ``settings.MIDDLEWARE``
(security.W001 / W002 / W003), and skip the checks that depend on it (HSTS, the SSL
redirect, secure CSRF and session cookies, ...) when the name is absent. Our subclasses
have other names, so this check runs those checks again with each subclass named as
Django's class, and reports what they find that Django's own run did not; Django's
"not in MIDDLEWARE" warnings for the three names are silenced in settings (here they
come back as ``agentsite.W001`` ... when the middleware is really missing).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, register
from django.core.checks.security import base, csrf, sessions
from django.utils.module_loading import import_string

# Django's checks that look for its middleware by name.
NAMED_CHECKS = (
    base.check_security_middleware, base.check_xframe_options_middleware, base.check_sts,
    base.check_sts_include_subdomains, base.check_sts_preload,
    base.check_content_type_nosniff, base.check_ssl_redirect, base.check_xframe_deny,
    base.check_referrer_policy, base.check_cross_origin_opener_policy,
    csrf.check_csrf_middleware, csrf.check_csrf_cookie_secure,
    sessions.check_session_cookie_secure, sessions.check_session_cookie_httponly,
)
# Silenced in settings for Django's run (names only); said again here under our ids.
SILENCED = ("security.W001", "security.W002", "security.W003")
BASES = (
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
)


def as_django_names(middleware: list[str]) -> list[str]:
    """``middleware`` with each subclass of one of Django's ``BASES`` named as that class."""
    named = []
    for path in middleware:
        cls = import_string(path)
        named.append(next((b for b in BASES if issubclass(cls, import_string(b))), path))
    return named


@register(Tags.security, deploy=True)
def check_subclassed_middleware(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    def run() -> list[CheckMessage]:
        return [m for check in NAMED_CHECKS for m in check(app_configs=app_configs)]

    from django.test.utils import override_settings  # here: web processes never need it

    seen = {(m.id, m.msg) for m in run()}
    with override_settings(MIDDLEWARE=as_django_names(list(settings.MIDDLEWARE))):
        again = run()
    found = []
    for message in again:
        if message.id in SILENCED:  # missing under either name
            found.append(type(message)(message.msg, hint=message.hint,
                                       id=message.id.replace("security.", "agentsite.")))
        elif (message.id, message.msg) not in seen:
            found.append(message)
    return found

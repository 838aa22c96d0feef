"""Small readers for environment variables that fail loudly on bad values."""

from __future__ import annotations

import functools
import os
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        if default is None:
            raise ImproperlyConfigured(f"environment variable {name} is required")
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use true/false, 1/0, yes/no)")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None


def env_seconds(name: str, default: float) -> float:
    """A duration in seconds: a number greater than zero."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        seconds = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number of seconds") from None
    if not seconds > 0:  # also refuses nan
        raise ImproperlyConfigured(f"{name}={value!r} must be more than 0 seconds")
    return seconds


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def parse_database_url(url: str) -> dict:
    """DATABASE_URL → Django DATABASES entry. Postgres only."""
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql"}:
        raise ImproperlyConfigured(
            f"DATABASE_URL must be a postgres:// or postgresql:// URL, got scheme {parsed.scheme!r}"
        )
    name = unquote(parsed.path.lstrip("/"))
    if not name:
        raise ImproperlyConfigured("DATABASE_URL has no database name (postgresql://host/NAME)")
    options = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    try:
        port = parsed.port
    except ValueError:
        raise ImproperlyConfigured(f"DATABASE_URL has an invalid port: {url!r}") from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": options.pop("host", parsed.hostname or ""),
        "PORT": str(port or ""),
        "OPTIONS": options,
    }


def check_redis_url(url: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme not in {"redis", "rediss"}:
        raise ImproperlyConfigured(f"REDIS_URL must be a redis:// or rediss:// URL, got {url!r}")
    try:
        _ = parsed.port  # urllib validates the port only when it is read
    except ValueError:
        raise ImproperlyConfigured(f"REDIS_URL has an invalid port: {url!r}") from None
    return url


def redis_kwargs(url: str) -> dict:
    """REDIS_URL → keyword arguments for redis.Redis (django-eventstream wants these)."""
    parsed = urlparse(url)
    db = parsed.path.lstrip("/") or "0"
    if not db.isdigit():
        raise ImproperlyConfigured(f"REDIS_URL database must be a number, got {db!r}")
    kwargs = {"host": parsed.hostname or "localhost", "port": parsed.port or 6379, "db": int(db)}
    if parsed.password:
        kwargs["password"] = unquote(parsed.password)
    if parsed.username:
        kwargs["username"] = unquote(parsed.username)
    if parsed.scheme == "rediss":
        kwargs["ssl"] = True
    return kwargs


def env_proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """``X-Forwarded-Proto`` or ``X-Forwarded-Proto: https`` → Django's
    ``SECURE_PROXY_SSL_HEADER`` tuple (``("HTTP_X_FORWARDED_PROTO", "https")``); unset → None.
    Set it only when a proxy in front sets that header on every request (and drops a
    client's): anyone else could claim HTTPS with it."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    header, _, expected = value.partition(":")
    header, expected = header.strip(), expected.strip() or "https"
    if not header or any(c in header for c in " \t,;") or not expected:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a header name (X-Forwarded-Proto) or 'Header: value'")
    return "HTTP_" + header.upper().replace("-", "_"), expected


_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@functools.lru_cache(maxsize=64)  # read at every request by agentsite.throttles
def parse_rate(value: str) -> tuple[int, int]:
    """``"600/m"``, ``"10/30s"``, ``"5/h"`` → (requests, seconds); ValueError otherwise."""
    count, sep, period = value.strip().partition("/")
    if not sep or not count.strip().isdigit():
        raise ValueError(value)
    period = period.strip().lower()
    unit = period[-1:] if period[-1:] in _PERIODS else "s"
    number = period[:-1] if period[-1:] in _PERIODS else period
    seconds = (int(number) if number else 1) * _PERIODS[unit] if (number or "1").isdigit() \
        else 0
    if seconds <= 0 or int(count) <= 0:
        raise ValueError(value)
    return int(count), seconds


def env_rate(name: str, default: str) -> str:
    """A request rate, ``N/period`` (``parse_rate``), checked now."""
    value = env_str(name, default)
    try:
        parse_rate(value)
    except ValueError:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a rate: N/period, e.g. 600/m, 10/30s, 5/h") from None
    return value

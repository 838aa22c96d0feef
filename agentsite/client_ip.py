"""The client's address, the one every limit and audit row counts by.

``REMOTE_ADDR`` unless ``TRUSTED_PROXY_COUNT`` proxies in front each append the address
they got the request from to ``X-Forwarded-For``: then the address that many entries
from its end (what the first trusted proxy saw). Entries further left are the client's
own claims and never count. DRF's throttles (``NUM_PROXIES``) and django-axes
(``AXES_CLIENT_IP_CALLABLE``) are given the same answer.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from django.conf import settings


def _address(text: str | None) -> str | None:
    try:
        return str(ipaddress.ip_address((text or "").strip()))
    except ValueError:  # none, or not an address (a Unix socket's peer)
        return None


def client_ip(request: Any) -> str | None:
    """The client's address, or None when there is none to tell."""
    meta = getattr(request, "META", {})
    remote = _address(meta.get("REMOTE_ADDR"))
    count = settings.TRUSTED_PROXY_COUNT
    if count and meta.get("HTTP_X_FORWARDED_FOR"):
        hops = meta["HTTP_X_FORWARDED_FOR"].split(",")
        return _address(hops[-min(count, len(hops))]) or remote
    return remote


def axes_client_ip(request: Any) -> str | None:
    """django-axes' ``AXES_CLIENT_IP_CALLABLE``."""
    return client_ip(request)

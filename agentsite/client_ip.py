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


def client_ip(request: Any) -> str | None:
    meta = getattr(request, "META", {})
    remote = meta.get("REMOTE_ADDR") or None
    count = settings.TRUSTED_PROXY_COUNT
    if count and meta.get("HTTP_X_FORWARDED_FOR"):
        hops = [hop.strip() for hop in meta["HTTP_X_FORWARDED_FOR"].split(",")]
        candidate = hops[-min(count, len(hops))]
        try:
            return str(ipaddress.ip_address(candidate))
        except ValueError:
            return remote
    return remote


def axes_client_ip(request: Any) -> str | None:
    """django-axes' ``AXES_CLIENT_IP_CALLABLE``."""
    return client_ip(request)

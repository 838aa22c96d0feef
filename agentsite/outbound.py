"""Requests the site makes to addresses others chose (webhook URLs, model base URLs):
never to loopback, link-local, private, shared or other non-global addresses (the cloud
metadata service at 169.254.169.254, the database port) unless ``OUTBOUND_ALLOW`` names
the host, the address or its network.

Checked at send time, after DNS resolution, by an httpx transport: the host is resolved,
every address it resolves to is checked, and the connection goes to the checked address
(the URL's host kept in the Host header and, for HTTPS, in SNI and the certificate check),
so a name that resolves differently a moment later (DNS rebinding) cannot slip through.
A refusal is ``OutboundRefused``, an ``httpx.ConnectError``: callers that handle a
failed connection handle it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any

import httpx
from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundRefused(httpx.ConnectError):
    """The URL's host resolves to an address outbound requests may not reach."""


def _allowed_by_setting(host: str, ip: Address, port: int) -> bool:
    for entry in settings.OUTBOUND_ALLOW:
        name, _, only_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if only_port and only_port != str(port):
            continue
        name = name.strip("[]").lower()
        if name == host.lower():
            return True
        try:
            if ip in ipaddress.ip_network(name, strict=False):
                return True
        except ValueError:
            continue
    return False


def refused_reason(ip: Address) -> str | None:
    """Why ``ip`` may not be reached (``loopback``, ``private``…), or None if it may."""
    mapped = getattr(ip, "ipv4_mapped", None)
    if mapped is not None:
        ip = mapped
    for kind in ("loopback", "link_local", "private", "multicast", "reserved", "unspecified"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if ip.is_global else "not global"


def resolve_checked(host: str, port: int) -> str:
    """The address to connect to for ``host``: every address it resolves to must be
    allowed (or named in ``OUTBOUND_ALLOW``); else ``OutboundRefused``."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as err:  # UnicodeError: a label over 63 bytes
        raise httpx.ConnectError(f"cannot resolve {host!r}: {err}") from None
    addresses = list(dict.fromkeys(info[4][0] for info in found))
    for text in addresses:
        ip = ipaddress.ip_address(text.split("%")[0])
        reason = refused_reason(ip)
        if reason and not _allowed_by_setting(host, ip, port):
            raise OutboundRefused(
                f"refused: {host} resolves to {ip} ({reason} address); add it to "
                "OUTBOUND_ALLOW to allow it")
    return addresses[0]


def _pinned(request: httpx.Request) -> httpx.Request:
    """The request sent to the checked address of its host."""
    host = request.url.host
    port = request.url.port or (443 if request.url.scheme == "https" else 80)
    address = resolve_checked(host, port)
    if address == host:
        return request
    request.url = request.url.copy_with(host=address)
    request.headers.setdefault("Host", f"{host}:{request.url.port}" if request.url.port
                               else host)
    if request.url.scheme == "https":
        request.extensions = {**request.extensions, "sni_hostname": host}
    return request


class OutboundTransport(httpx.BaseTransport):
    """Checks and pins each request, then sends it with ``inner`` (httpx's own transport
    unless given: any transport, e.g. one whose calls a cancel can cut)."""

    def __init__(self, inner: httpx.BaseTransport | None = None) -> None:
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.inner.handle_request(_pinned(request))

    def close(self) -> None:
        self.inner.close()


class AsyncOutboundTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self.inner = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        # The name is resolved in a thread: getaddrinfo blocks.
        pinned = await asyncio.to_thread(_pinned, request)
        return await self.inner.handle_async_request(pinned)

    async def aclose(self) -> None:
        await self.inner.aclose()


def outbound_client(transport: httpx.BaseTransport | None = None,
                    **kwargs: Any) -> httpx.Client:
    """An httpx client whose every request is checked (``transport``: what sends it once
    checked; ``kwargs``: httpx.Client's)."""
    return httpx.Client(transport=OutboundTransport(transport), **kwargs)


def outbound_async_client(**kwargs: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=AsyncOutboundTransport(), **kwargs)


def check_url(url: str) -> None:
    """Check a URL's host now (for clients whose transport cannot be given: the
    Anthropic SDK's); ``OutboundRefused`` if it may not be reached."""
    parsed = httpx.URL(url)
    resolve_checked(parsed.host, parsed.port or (443 if parsed.scheme == "https" else 80))

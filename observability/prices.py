"""Settings of the observability package read when settings load, loud on a bad value:
the model price table for the Insights page's cost column (``MODEL_PRICES``: USD per
million input and output tokens, by model name as the providers report it) and the
addresses that may read ``/metrics`` (``METRICS_ALLOW``)."""

from __future__ import annotations

import ipaddress
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ImproperlyConfigured


def model_prices(entries: list[str]) -> dict[str, tuple[Decimal, Decimal]]:
    """``["gpt-4o-mini=0.15/0.60", …]`` → {model: (input, output)}; loud on a bad entry."""
    table = {}
    for entry in entries:
        model, _, prices = entry.partition("=")
        given, _, taken = prices.partition("/")
        try:
            pair = (Decimal(given.strip()), Decimal(taken.strip()))
        except InvalidOperation:
            pair = None
        if not model.strip() or pair is None or min(pair) < 0:
            raise ImproperlyConfigured(
                f"MODEL_PRICES entry {entry!r}: use model=input/output (USD per million "
                "tokens), e.g. gpt-4o-mini=0.15/0.60")
        table[model.strip()] = pair
    return table


def networks_parse(entries: list[str]) -> list[str]:
    """``["10.0.0.0/8", "192.0.2.7"]``: each an address or network, else refused."""
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ImproperlyConfigured(
                f"METRICS_ALLOW entry {entry!r} is not an address or network") from None
    return entries

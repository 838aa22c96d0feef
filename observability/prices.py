"""The model price table for the Insights page's cost column: USD per million input and
output tokens, by model name as the providers report it (``MODEL_PRICES``)."""

from __future__ import annotations

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

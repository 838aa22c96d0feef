"""The observability settings refuse a bad value loudly, naming it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from observability.prices import model_prices, networks_parse


def test_prices_and_networks_are_checked():
    assert model_prices(["gpt-4o-mini=0.15/0.60"]) == {
        "gpt-4o-mini": (Decimal("0.15"), Decimal("0.60"))}
    for bad in ("gpt", "gpt=1", "gpt=a/b", "=1/2", "gpt=-1/2"):
        with pytest.raises(ImproperlyConfigured, match="MODEL_PRICES"):
            model_prices([bad])
    assert networks_parse(["10.0.0.0/8", "::1"]) == ["10.0.0.0/8", "::1"]
    with pytest.raises(ImproperlyConfigured, match="prometheus.internal"):
        networks_parse(["prometheus.internal"])

"""Operability: Prometheus metrics, OpenTelemetry traces, JSON logs and the admin's
Insights page (docs/observability.md).

``metrics``, ``tracing`` and ``logs`` sit at the bottom of the layers (they import only
Django and the libraries), so every layer may record what it does; ``endpoint``,
``collectors`` and ``insights`` read the business tables and are surfaces.
"""

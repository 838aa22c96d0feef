"""Model fields of our own."""

from __future__ import annotations

import functools
import json
from typing import Any

from django.db import models
from psycopg.types.json import Json


class VerbatimJSONField(models.JSONField):
    """A JSONField kept as written: on Postgres a ``json`` column (the text as given), not
    ``jsonb``, which reorders an object's keys (shortest first) and keeps one of
    duplicate keys. For values shown as the graph raised them: adopters diff them.

    The value goes in as ``json`` (a ``jsonb`` parameter would be reordered on its way)
    and psycopg reads a ``json`` column back into Python objects itself, in order.
    ``json`` has no equality operator: no ``DISTINCT``, ``GROUP BY`` or ``=`` on it."""

    def db_type(self, connection: Any) -> str | None:
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if connection.vendor != "postgresql":
            return super().get_db_prep_value(value, connection, prepared)
        if not prepared:
            value = self.get_prep_value(value)
        if hasattr(value, "as_sql"):
            return value
        return Json(value, dumps=functools.partial(json.dumps, cls=self.encoder))

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if value is not None and not isinstance(value, str):
            return value  # already decoded by psycopg (a json column)
        return super().from_db_value(value, expression, connection)

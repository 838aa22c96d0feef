"""The token lookup every API request pays, in plain SQL (issue 37).

Through the ORM (``select_related("user").filter(digest=...).first()``) the query was
compiled on every request; here it is built once from the models' public field API
(``_meta``, ``Field.from_db_value``, ``Model.from_db``), so a field added to either model
is read here too. No lock: a token's row changes only by its owner or an admin (revoke,
expiry), and a request that read it just before counts as made before the change.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from agentsite.models import ApiToken


def _columns(meta: Any, alias: str) -> str:
    return ", ".join(f"{alias}.{connection.ops.quote_name(f.column)}"
                     for f in meta.concrete_fields)


def _lookup_sql() -> str:
    q = connection.ops.quote_name
    token, user = ApiToken._meta, get_user_model()._meta
    user_fk = token.get_field("user").column
    return (f"SELECT {_columns(token, 't')}, {_columns(user, 'u')} "
            f"FROM {q(token.db_table)} t JOIN {q(user.db_table)} u "
            f"ON u.{q(user.pk.column)} = t.{q(user_fk)} WHERE t.{q('digest')} = %s")


_SQL: list[str] = []  # built at the first request (the user model is known by then)


def _instance(model: Any, values: list[Any]) -> Any:
    fields = model._meta.concrete_fields
    for i, field in enumerate(fields):
        if hasattr(field, "from_db_value"):
            values[i] = field.from_db_value(values[i], None, connection)
    return model.from_db(connection.alias, [f.attname for f in fields], values)


def token_with_user(digest: str) -> ApiToken | None:
    """The token whose digest is ``digest``, its ``user`` loaded with it (one query)."""
    if not _SQL:
        _SQL.append(_lookup_sql())
    with connection.cursor() as cursor:
        cursor.execute(_SQL[0], [digest])
        row = cursor.fetchone()
    if row is None:
        return None
    split = len(ApiToken._meta.concrete_fields)
    token = _instance(ApiToken, list(row[:split]))
    token.user = _instance(get_user_model(), list(row[split:]))
    return token

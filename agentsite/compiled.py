"""Querysets compiled to SQL once and run again with new values: the hot path's reads.

Django builds and compiles a queryset's SQL on every evaluation. For the few reads every
segment makes (the locking reads of a decision and of a pause) that costs more Python
than the query takes in Postgres on a small machine. A ``Compiled`` query keeps what
Django compiled the first time: the SQL, where its values go, and how a row becomes a
model instance (the same ``from_db``, converters and annotations as a queryset). The
queryset stays the one definition, so model changes still change the SQL.

Only for plain model querysets: no ``select_related``, ``prefetch_related``, ``values``,
``defer`` / ``only``, or values whose SQL shape varies (``__in`` lists).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet
from django.db.transaction import TransactionManagementError

M = TypeVar("M", bound=Model)


class _Marker(str):
    """A unique stand-in value, found again among the compiled query's parameters."""


@dataclass(frozen=True)
class _Plan:
    sql: str
    params: tuple[Any, ...]
    slots: dict[int, str]  # parameter position → the value's name
    model: type[Model]
    init: list[str]
    fields: slice
    converters: list[tuple[int, list[Any], Any]]
    annotations: dict[str, int]
    locks: bool


class Compiled(Generic[M]):
    """``build(**markers)`` returns the queryset; ``all(**values)`` runs it with values.

    Each named value must be a string or a UUID (as the fields compare them): a marker
    of that type is passed to ``build`` once, to find where the value goes in the SQL.
    """

    def __init__(self, build: Callable[..., QuerySet[M]], using: str = DEFAULT_DB_ALIAS,
                 **kinds: type) -> None:
        self.build, self.using, self.kinds = build, using, kinds
        self.plan: _Plan | None = None
        self.lock = threading.Lock()

    def all(self, **values: Any) -> list[M]:
        plan = self.plan or self._compile()
        connection = connections[self.using]
        if plan.locks and connection.get_autocommit():
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction.")
        params = list(plan.params)
        for position, name in plan.slots.items():
            params[position] = values[name]
        with connection.cursor() as cursor:
            cursor.execute(plan.sql, params)
            rows = cursor.fetchall()
        out = []
        for row in rows:
            if plan.converters:
                row = list(row)
                for position, convs, expression in plan.converters:
                    value = row[position]
                    for convert in convs:
                        value = convert(value, expression, connection)
                    row[position] = value
            obj = plan.model.from_db(self.using, plan.init, row[plan.fields])
            for name, position in plan.annotations.items():
                setattr(obj, name, row[position])
            out.append(obj)
        return out  # type: ignore[return-value]

    def first(self, **values: Any) -> M | None:
        found = self.all(**values)
        return found[0] if found else None

    def _compile(self) -> _Plan:
        with self.lock:
            if self.plan is None:
                self.plan = self._plan()
        return self.plan

    def _plan(self) -> _Plan:
        markers = {name: (uuid.uuid4() if kind is uuid.UUID else _Marker(uuid.uuid4().hex))
                   for name, kind in self.kinds.items()}
        queryset = self.build(**markers)
        query = queryset.query
        if query.select_related or queryset._prefetch_related_lookups or \
                query.deferred_loading[0] or queryset._iterable_class.__name__ != "ModelIterable":
            raise ValueError("Compiled takes plain model querysets only")
        compiler = query.get_compiler(using=self.using)
        sql, params = compiler.as_sql()
        by_value = {marker: name for name, marker in markers.items()}
        slots = {i: by_value[p] for i, p in enumerate(params) if _hashable(p) and p in by_value}
        if sorted(slots.values()) != sorted(markers):
            raise ValueError("each value must appear once in the compiled SQL")
        select, klass_info = compiler.select, compiler.klass_info
        positions = klass_info["select_fields"]
        fields = slice(positions[0], positions[-1] + 1)
        columns = [s[0] for s in select[:compiler.col_count]]
        return _Plan(
            sql=sql, params=tuple(params), slots=slots, model=klass_info["model"],
            init=[s[0].target.attname for s in select[fields]], fields=fields,
            converters=[(position, convs, expression) for position, (convs, expression)
                        in compiler.get_converters(columns).items()],
            annotations=dict(compiler.annotation_col_map),
            locks=bool(query.select_for_update))


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, uuid.UUID))

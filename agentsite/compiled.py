"""Statements made once and run again with new values: the hot path's reads and writes.

Django builds and compiles a statement's SQL every time it runs one. For the few
statements every segment makes (the locking reads, the status updates and the audit
rows of a decision and of a pause) that costs more Python than the statement takes in
Postgres on a small machine.

- ``Compiled`` keeps what Django compiled the first time for a queryset: the SQL, where
  its values go, and how a row becomes a model instance (the same ``from_db``,
  converters and annotations as a queryset). The queryset stays the one definition, so
  model changes still change the SQL. Only for plain model querysets: no
  ``select_related``, ``prefetch_related``, ``values``, ``defer`` / ``only``, or values
  whose SQL shape varies (``__in`` lists).
- ``CompiledUpdate`` is the same for an UPDATE (``queryset.update(**values)``), sent
  like ``update_later``; ``AnyOf`` matches a column against a list given as one value.
- ``save_fields`` and ``insert`` are ``obj.save(update_fields=...)`` and
  ``bulk_create``: the same values (each field's ``pre_save`` and
  ``get_db_prep_save``), with the SQL made once per model and field list. Like
  ``bulk_create`` they send no model signals (no model here has receivers) and skip
  ``save()`` overrides.
- ``batched``: inside a transaction, writes made with ``defer=True`` (and
  ``update_later``) wait and travel with the next statement on the connection, in
  the same round trip (several statements in one ``execute``: Django's psycopg
  cursors bind values client-side), or go out together at the end of the block.
  Their checks (a row was updated) and returned values (ids) arrive with them.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.models import Field, Lookup, Model, QuerySet
from django.db.models.sql import UpdateQuery
from django.db.transaction import TransactionManagementError

from agentsite import prepared

M = TypeVar("M", bound=Model)


class _Marker(str):
    """A unique stand-in value, found again among the compiled query's parameters."""


def _markers(kinds: dict[str, type]) -> dict[str, Any]:
    """A unique stand-in per named value, of a type its field passes through unchanged:
    a UUID, an aware datetime, or a string (also for a list, as ``AnyOf`` takes it)."""
    made: dict[str, Any] = {}
    for name, kind in kinds.items():
        if kind is uuid.UUID:
            made[name] = uuid.uuid4()
        elif kind is datetime:
            made[name] = datetime(1901, 1, 1, tzinfo=UTC) + timedelta(
                microseconds=random.getrandbits(48))
        elif kind in (str, list):
            made[name] = _Marker(uuid.uuid4().hex)
        else:
            raise ValueError(f"{name}: a value is a str, UUID, datetime or list")
    return made


def _slots(params: Sequence[Any], markers: dict[str, Any]) -> dict[int, str]:
    """Parameter position → the value's name; each value must appear exactly once."""
    by_value = {marker: name for name, marker in markers.items()}
    slots = {i: by_value[p] for i, p in enumerate(params)
             if isinstance(p, (str, uuid.UUID, datetime)) and p in by_value}
    if sorted(slots.values()) != sorted(markers):
        raise ValueError("each value must appear once in the compiled SQL")
    return slots


def _filled(sql: str, params: Sequence[Any], slots: dict[int, str],
            values: dict[str, Any]) -> tuple[str, list[Any]]:
    out = list(params)
    for position, name in slots.items():
        out[position] = values[name]
    return sql, out


class AnyOf(Lookup):
    """``column = ANY(%s)``: a list as one value (one SQL shape for any length, where
    ``__in`` makes one per length). Used as ``filter(AnyOf(F("column"), values))``."""

    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = ANY({rhs})", [*lhs_params, *rhs_params]


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

    Each named value is a string, a UUID, a datetime or (for ``AnyOf``) a list, as
    ``kinds`` says: a marker of that type is passed to ``build`` once, to find where the
    value goes in the SQL.
    """

    def __init__(self, build: Callable[..., QuerySet[M]], using: str = DEFAULT_DB_ALIAS,
                 **kinds: type) -> None:
        self.build, self.using, self.kinds = build, using, kinds
        self.plan: _Plan | None = None
        self.lock = threading.Lock()

    def all(self, **values: Any) -> list[M]:
        return together((self, values))[0]

    def _statement(self, values: dict[str, Any]) -> tuple[str, list[Any]]:
        plan = self.plan or self._compile()
        if plan.locks and connections[self.using].get_autocommit():
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction.")
        return _filled(plan.sql, plan.params, plan.slots, values)

    def _objects(self, rows: list[tuple[Any, ...]]) -> list[M]:
        plan = self.plan
        assert plan is not None
        connection = connections[self.using]
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
        markers = _markers(self.kinds)
        queryset = self.build(**markers)
        query = queryset.query
        if query.select_related or queryset._prefetch_related_lookups or \
                query.deferred_loading[0] or queryset._iterable_class.__name__ != "ModelIterable":
            raise ValueError("Compiled takes plain model querysets only")
        compiler = query.get_compiler(using=self.using)
        sql, params = compiler.as_sql()
        slots = _slots(params, markers)
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


def together(*reads: tuple[Compiled[Any], dict[str, Any]]) -> list[list[Any]]:
    """Several compiled reads of one database in one round trip, run in the order given
    (locks are taken in that order): ``[(compiled, values), ...]`` → their rows."""
    using = reads[0][0].using
    if any(compiled.using != using for compiled, _ in reads):
        raise ValueError("together() reads one database")
    statements = [compiled._statement(values) for compiled, values in reads]
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute("; ".join(prepared.statement(connection, sql) for sql, _ in statements),
                       [p for _, params in statements for p in params])
        found = []
        for compiled, _ in reads:
            found.append(compiled._objects(cursor.fetchall()))
            cursor.cursor.nextset()
    return found


_statements: dict[tuple[Any, ...], tuple[str, list[Field]]] = {}


def save_fields(obj: Model, fields: Sequence[str], using: str = DEFAULT_DB_ALIAS, *,
                defer: bool = False) -> None:
    """``obj.save(update_fields=fields)`` (``auto_now`` fields update when named).
    ``defer``: inside ``batched``, sent with the next statement (checked then)."""
    model, connection = type(obj), connections[using]
    key = ("update", model, tuple(fields))
    if key not in _statements:
        columns = [_plain(model._meta.get_field(name)) for name in fields]
        if any(f.primary_key for f in columns):
            raise ValueError("the primary key is not updated")
        qn = connection.ops.quote_name
        _statements[key] = (
            f"UPDATE {qn(model._meta.db_table)} SET "
            + ", ".join(f"{qn(f.column)} = %s" for f in columns)
            + f" WHERE {qn(model._meta.pk.column)} = %s", columns)
    sql, columns = _statements[key]
    params = [f.get_db_prep_save(f.pre_save(obj, False), connection) for f in columns]
    params.append(model._meta.pk.get_db_prep_value(obj.pk, connection))
    _run(connection, sql, params, _one_row_updated, defer)


def _one_row_updated(cursor: Any) -> None:
    if cursor.rowcount == 0:
        raise DatabaseError("Save with update_fields did not affect any rows.")


def insert(objs: Sequence[Model], using: str = DEFAULT_DB_ALIAS, *,
           defer: bool = False) -> None:
    """``bulk_create(objs)`` for new rows of one model, in one INSERT: ids made by the
    database are set on the objects, which are then saved instances. ``defer``: inside
    ``batched``, sent with the next statement (ids set then)."""
    if not objs:
        return
    model, connection = type(objs[0]), connections[using]
    meta = model._meta
    key = ("insert", model, len(objs))
    if key not in _statements:
        columns = [_plain(f) for f in meta.concrete_fields
                   if f not in meta.db_returning_fields]
        qn = connection.ops.quote_name
        row = "(" + ", ".join(["%s"] * len(columns)) + ")"
        returning = ", ".join(qn(f.column) for f in meta.db_returning_fields)
        _statements[key] = (
            f"INSERT INTO {qn(meta.db_table)} ("
            + ", ".join(qn(f.column) for f in columns) + ") VALUES "
            + ", ".join([row] * len(objs)) + (f" RETURNING {returning}" if returning else ""),
            columns)
    sql, columns = _statements[key]
    params = []
    for obj in objs:
        obj._prepare_related_fields_for_save(operation_name="bulk_create")
        if obj.pk is None and meta.pk not in meta.db_returning_fields:
            obj.pk = meta.pk.get_pk_value_on_save(obj)
        params.extend(f.get_db_prep_save(f.pre_save(obj, True), connection) for f in columns)

    def inserted(cursor: Any) -> None:
        made = cursor.fetchall() if meta.db_returning_fields else [()] * len(objs)
        for obj, values in zip(objs, made, strict=True):
            for field, value in zip(meta.db_returning_fields, values, strict=True):
                setattr(obj, field.attname, value)
            obj._state.adding, obj._state.db = False, using

    _run(connection, sql, params, inserted, defer)


def update_later(queryset: QuerySet, **values: Any) -> None:
    """``queryset.update(**values)`` (the same SQL, Django's), sent with the next
    statement inside ``batched`` (now outside it); the number of rows is not read."""
    sql, params = _update_sql(queryset, values, using=queryset.db)
    # Not prepared: its SQL is made per call, in as many shapes as querysets.
    _run(connections[queryset.db], sql, list(params), None, True, prepare=False)


class CompiledUpdate:
    """``build(**markers)`` returns ``(queryset, values)``; ``later(**values)`` is
    ``update_later(queryset, **values)`` with them, its SQL made once (as ``Compiled``,
    whose kinds of values it takes)."""

    def __init__(self, build: Callable[..., tuple[QuerySet, dict[str, Any]]],
                 using: str = DEFAULT_DB_ALIAS, **kinds: type) -> None:
        self.build, self.using, self.kinds = build, using, kinds
        self.plan: tuple[str, tuple[Any, ...], dict[int, str]] | None = None
        self.lock = threading.Lock()

    def later(self, **values: Any) -> None:
        if self.plan is None:
            with self.lock:
                if self.plan is None:
                    markers = _markers(self.kinds)
                    sql, params = _update_sql(*self.build(**markers), using=self.using)
                    self.plan = (sql, tuple(params), _slots(params, markers))
        _run(connections[self.using], *_filled(*self.plan, values), None, True)


def _update_sql(queryset: QuerySet, values: dict[str, Any],
                using: str) -> tuple[str, Sequence[Any]]:
    query = queryset.query.chain(UpdateQuery)
    query.add_update_values(values)
    query.annotations = {}
    if query.related_updates:
        raise ValueError("an update of one table only")
    return query.get_compiler(using).as_sql()


@dataclass(frozen=True)
class _Deferred:
    sql: str
    params: list[Any]
    # Called with the psycopg cursor on this statement's result (checks, returned ids).
    done: Callable[[Any], None] | None


class _Batch:
    """An execute wrapper (``connection.execute_wrapper``) that sends the deferred
    statements in front of the next one; the cursor is left on that one's result."""

    def __init__(self) -> None:
        self.pending: list[_Deferred] = []

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool,
                 context: dict[str, Any]) -> Any:
        if not self.pending:
            return execute(sql, params, many, context)
        pending, self.pending = self.pending, []
        if sql.lstrip()[:8].upper() == "ROLLBACK":
            # ROLLBACK TO SAVEPOINT: every statement that opens a savepoint sends what
            # waits first, so what waits now was made inside the one rolled back (and the
            # transaction may be in error, where nothing else would run).
            return execute(sql, params, many, context)
        if many or not isinstance(params, (list, tuple)):
            # executemany, named or no values (a literal % would read as a placeholder):
            # the deferred statements go first, on their own.
            execute(*_joined(pending), False, context)
            _results(pending, context["cursor"].cursor)
            return execute(sql, params, many, context)
        joined, values = _joined(pending)
        result = execute(f"{joined}; {sql}", [*values, *params], many, context)
        _results(pending, context["cursor"].cursor)  # ends on the statement's own result
        return result

    def flush(self, connection: Any) -> None:
        if self.pending:
            pending, self.pending = self.pending, []
            with connection.cursor() as cursor:
                cursor.execute(*_joined(pending))
                _results(pending, cursor.cursor)


def _joined(pending: list[_Deferred]) -> tuple[str, list[Any]]:
    return "; ".join(d.sql for d in pending), [p for d in pending for p in d.params]


def _results(pending: list[_Deferred], cursor: Any) -> None:
    """Hand each deferred statement its result, in order (psycopg's ``nextset``); the
    cursor is left on the result after theirs."""
    for deferred in pending:
        if deferred.done is not None:
            deferred.done(cursor)
        cursor.nextset()


def _run(connection: Any, sql: str, params: list[Any], done: Callable[[Any], None] | None,
         defer: bool, *, prepare: bool = True) -> None:
    if prepare:  # SQL made once: prepared on the connections that have it
        sql = prepared.statement(connection, sql)
    batch = getattr(connection, "agentsite_batch", None) if defer else None
    if batch is not None:
        batch.pending.append(_Deferred(sql, params, done))
        return
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if done is not None:
            done(cursor.cursor)


def send_pending(using: str = DEFAULT_DB_ALIAS) -> None:
    """Send the deferred writes now (inside ``batched``; else there are none)."""
    connection = connections[using]
    batch = getattr(connection, "agentsite_batch", None)
    if batch is not None:
        batch.flush(connection)


@contextmanager
def batched(using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Deferred writes in this block share round trips with the statements after them.

    Only inside a transaction, which the block must not outlive with writes pending:
    at its end they are sent; if it raises, they are dropped and the transaction is
    marked for rollback (so a caller catching the error cannot commit without them).
    A savepoint rolled back inside the block takes the writes made in it, and a
    transaction marked for rollback (``set_rollback``) all of them.
    """
    connection = connections[using]
    if connection.get_autocommit():
        raise TransactionManagementError("batched() needs a transaction")
    if getattr(connection, "agentsite_batch", None) is not None:
        yield  # already batching: the outer block sends them
        return
    batch = connection.agentsite_batch = _Batch()
    try:
        with connection.execute_wrapper(batch):
            try:
                yield
            except BaseException:
                if batch.pending:
                    batch.pending.clear()
                    transaction.set_rollback(True, using=using)
                raise
            if connection.needs_rollback:  # it will roll back: nothing to send
                batch.pending.clear()
            else:
                batch.flush(connection)
    finally:
        connection.agentsite_batch = None


def _plain(field: Field) -> Field:
    # A column whose value goes in as a plain %s parameter, as Django's compilers write
    # it; others (binary placeholders, database defaults, generated) keep the ORM's path.
    if not field.concrete or hasattr(field, "get_placeholder") or getattr(
            field, "generated", False) or field.has_db_default():
        raise ValueError(f"{field} is not a plain column")
    return field

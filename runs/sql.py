"""The runs' hot-path SQL, by ``cursor.execute`` (issue 37).

Every segment pays these: the run's lock, its status change with the transaction's audit
rows. Through the ORM each is compiled on every call (a run lock 271 µs, 188 of them
compiling; 47 µs here). Columns and values come from the models' public field API
(``_meta``, ``Field.pre_save`` / ``get_db_prep_save`` / ``from_db_value``,
``Model.from_db``), so a field added to a model is read and written here as well, the
values exactly as ``save()`` sends them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db import connection, models

from observability import metrics
from runs.models import AgentRun, AuditLog, Message, SegmentUsage

_RUN = AgentRun._meta
_RUN_FIELDS = _RUN.concrete_fields
_RUN_NAMES = [f.attname for f in _RUN_FIELDS]
# The fields whose database value needs converting (JSON arrives as text).
_RUN_CONVERTED = [(i, f) for i, f in enumerate(_RUN_FIELDS) if hasattr(f, "from_db_value")]
_AUDIT_FIELDS = [f for f in AuditLog._meta.concrete_fields if not f.primary_key]


@functools.cache  # the same few names, on every write (20,000 calls per 30 dev runs)
def _q(name: str) -> str:
    return connection.ops.quote_name(name)


_RUN_COLUMNS = ", ".join(_q(f.column) for f in _RUN_FIELDS)
# The run's row lock: the first statement of a decision's, a claim's, a cancel's and a
# failure's transaction. FOR UPDATE: of two that race for one run (two deliveries of one
# task, two answers, an answer and a cancel, a cancel and the segment's end) the second
# waits here until the first commits, then reads its status.
LOCK_SQL = (f"SELECT {_RUN_COLUMNS} FROM {_q(_RUN.db_table)} "
            f"WHERE {_q(_RUN.pk.column)} = %s FOR UPDATE")
# The same lock for a claim, whose commit need not wait for the WAL flush (set here, in the
# lock's own statement: one round trip fewer than a SET LOCAL of its own). A claim lost
# with a Postgres crash leaves the run unclaimed, as if the task had not started, and the
# unacked task claims it again; the segment's synchronous pause / finish commit flushes it
# (WAL is flushed in order).
CLAIM_LOCK_SQL = (f"SELECT set_config('synchronous_commit', 'off', true), {_RUN_COLUMNS} "
                  f"FROM {_q(_RUN.db_table)} WHERE {_q(_RUN.pk.column)} = %s FOR UPDATE")


@dataclass(frozen=True)
class Related:
    """Rows read with the run's lock, in the lock's statement (``run_lock(related=...)``):
    ``sql`` is a scalar subquery giving JSON, over ``r``, the locked run (``r.id``);
    ``build`` makes the value set on the run as ``attr`` from the decoded JSON (None when
    the subquery found no rows)."""

    attr: str
    sql: str
    build: Callable[[Any], Any]


_PK = _q(_RUN.pk.column)
_TABLE = _q(_RUN.db_table)


@functools.cache  # one string per combination (a handful), not built on every lock
def _lock_with_sql(related: tuple[Related, ...], claim: bool) -> str:
    # The lock first (the CTE), then the related rows (the outer SELECT's subqueries), so
    # rows a subquery locks are locked after the run, in the order every writer takes them.
    # One statement reads in one snapshot, taken before the lock was granted. Rows a
    # subquery locks come back as their latest version anyway (an answer recorded by the
    # holder we waited for is seen). Rows added after the snapshot (a question, a usage
    # row) are added by writers that also update the run's row (a pause, a usage record),
    # under its lock: so the statement says whether the locked row is still the version
    # its snapshot sees (``xmin``), and when it is not, ``run_lock`` reads the related
    # rows again, under the lock, in a statement of its own.
    columns = ", ".join(f"r.{_q(f.column)}" for f in _RUN_FIELDS)
    subqueries = ", ".join(f"({rel.sql})" for rel in related)
    sync = "set_config('synchronous_commit', 'off', true), " if claim else ""
    return (f"WITH r AS (SELECT xmin AS lock_xmin, {_RUN_COLUMNS} FROM {_TABLE} "
            f"WHERE {_PK} = %s FOR UPDATE) "
            f"SELECT {sync}r.lock_xmin = (SELECT s.xmin FROM {_TABLE} s "
            f"WHERE s.{_PK} = r.{_PK}), {columns}, {subqueries} FROM r")


def run_lock(pk: Any, *, claim: bool = False,
             related: Sequence[Related] = ()) -> AgentRun | None:
    """The run ``pk`` with its row locked until the transaction ends (None: no such run).
    ``claim``: the transaction commits without waiting for the WAL flush (``CLAIM_LOCK_SQL``).
    ``related``: rows read with it, in the same statement (set on the run as their
    ``attr``). A malformed id raises ``ValidationError``, as the ORM's lookup does."""
    pk = _RUN.pk.to_python(pk)
    with connection.cursor() as cursor:
        if related:
            cursor.execute(_lock_with_sql(tuple(related), claim), [pk])
        else:
            cursor.execute(CLAIM_LOCK_SQL if claim else LOCK_SQL, [pk])
        row = cursor.fetchone()
        if row is None:
            return None
        row = list(row[1:] if claim else row)
        extra: list[Any] = []
        if related:
            fresh, row, extra = row[0], row[1:len(_RUN_FIELDS) + 1], row[len(_RUN_FIELDS) + 1:]
            if not fresh:  # a fresh snapshot now that the lock is ours (see _lock_with_sql)
                cursor.execute(f"SELECT {', '.join(f'({rel.sql})' for rel in related)} "
                               f"FROM {_TABLE} r WHERE r.{_PK} = %s", [pk])
                extra = list(cursor.fetchone())
    for i, field in _RUN_CONVERTED:
        row[i] = field.from_db_value(row[i], None, connection)
    run = AgentRun.from_db(connection.alias, _RUN_NAMES, row)
    for rel, value in zip(related, extra, strict=True):
        setattr(run, rel.attr, rel.build(json.loads(value) if isinstance(value, str)
                                         else value))
    return run


def json_rows(model: type[models.Model], items: list[dict[str, Any]] | None,
              extra: Sequence[str] = ()) -> list[Any]:
    """Instances of ``model`` from rows as ``to_jsonb`` gives them (a ``Related``'s
    JSON), each field's value as its ``to_python`` makes it (JSON fields as they are),
    and ``extra`` keys set as attributes (annotations)."""
    fields = model._meta.concrete_fields
    names = [f.attname for f in fields]
    out = []
    for item in items or ():
        values = [item.get(f.column) if isinstance(f, models.JSONField)
                  or item.get(f.column) is None else f.to_python(item[f.column])
                  for f in fields]
        obj = model.from_db(connection.alias, names, values)
        for name in extra:
            setattr(obj, name, item.get(name))
        out.append(obj)
    return out


# The conversation's messages, read with the run's lock at a segment's end (for
# MESSAGES_SNAPSHOT), in their order: rows with ``id``, ``role``, ``content``.
_MESSAGE = Message._meta
MESSAGES = Related(
    "conversation_messages",
    "SELECT jsonb_agg(jsonb_build_object('id', m.id, 'role', m.role, 'content', m.content) "
    f"ORDER BY m.created_at, m.id) FROM {_q(_MESSAGE.db_table)} m "
    f"WHERE m.{_q('conversation_id')} = r.{_q('conversation_id')}", lambda rows: rows)


# The user's text that started the run (its first segment's input), read with the claim's
# lock: "" when the run was started without one.
START_MESSAGE = Related(
    "start_message",
    f"SELECT to_jsonb(m.content) FROM {_q(_MESSAGE.db_table)} m "
    f"WHERE m.{_q('run_id')} = r.{_PK} AND m.role = 'user' ORDER BY m.created_at, m.id LIMIT 1",
    lambda text: text or "")


def usage_related() -> Related:
    """The run's segment usage rows, as ``usage_rows`` (what ``RunSerializer`` shows)."""
    table = _q(SegmentUsage._meta.db_table)
    return Related("usage_rows", f"SELECT jsonb_agg(to_jsonb(u) ORDER BY u.id) FROM {table} u "
                                 f"WHERE u.run_id = r.{_PK}",
                   lambda items: json_rows(SegmentUsage, items))


# A data-modifying statement to run inside another's (``writes_together``): SQL, params.
Write = tuple[str, list[Any]]


class Inserted(NamedTuple):
    """A write that inserts one row whose id the database makes: ``sql`` ends in
    ``RETURNING`` its id, which ``writes_together`` hands to ``receive``."""

    sql: str
    params: list[Any]
    receive: Callable[[Any], None]


def insert_returning(obj: Any) -> Inserted:
    """The INSERT of ``obj`` (its id made by the database, set on it once sent), to run
    with others in one statement (``writes_together``)."""
    meta = obj._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    sql = (f"INSERT INTO {_q(meta.db_table)} ({', '.join(_q(f.column) for f in fields)}) "
           f"VALUES ({', '.join(['%s'] * len(fields))}) RETURNING {_q(meta.pk.column)}")
    return Inserted(sql, params, lambda value: setattr(obj, meta.pk.attname, value))


def update_of(obj: Any, fields: Sequence[str]) -> Write:
    """The UPDATE that ``obj.save(update_fields=fields)`` sends (an ``auto_now`` field is
    set when listed, as there), to run with others in one statement (``writes_together``)."""
    meta = obj._meta
    sets, params = [], []
    for name in dict.fromkeys(fields):
        field = meta.get_field(name)
        sets.append(f"{_q(field.column)} = %s")
        params.append(field.get_db_prep_save(field.pre_save(obj, False), connection))
    params.append(obj.pk)
    return (f"UPDATE {_q(meta.db_table)} SET {', '.join(sets)} "
            f"WHERE {_q(meta.pk.column)} = %s", params)


def insert_of(objs: Sequence[Any]) -> Write:
    """The INSERT of new rows of one model whose primary keys are set already (a UUID
    default), with every concrete field as ``bulk_create`` sends it, to run with others in
    one statement (``writes_together``). Foreign keys are checked at commit (Django makes
    them deferrable), so the rows may go in after rows that point at them."""
    meta = objs[0]._meta
    fields = meta.concrete_fields
    params: list[Any] = []
    rows = []
    for obj in objs:
        rows.append("(" + ", ".join(["%s"] * len(fields)) + ")")
        params.extend(f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields)
    columns = ", ".join(_q(f.column) for f in fields)
    return f"INSERT INTO {_q(meta.db_table)} ({columns}) VALUES {', '.join(rows)}", params


def writes_together(*, writes: Sequence[Write | Inserted] = (),
                    audits: Sequence[AuditLog] = ()) -> None:
    """``writes`` and the INSERT of ``audits`` (in order) in ONE statement: a status change
    and its audit rows commit together, as they must, for one round trip. Each write
    must touch rows no other one touches (they all see the statement's one snapshot).
    An ``Inserted`` write gets the id of its row. Caller holds the run's row lock
    (``run_lock``)."""
    writes = list(writes)
    if not writes and not audits:
        return
    params: list[Any] = []
    pk = AuditLog._meta.pk
    inserted = [(i, w) for i, w in enumerate(writes) if isinstance(w, Inserted)]
    ctes = [f"w{i} AS ({w[0]})" if isinstance(w, Inserted) else f"w{i} AS ({w[0]} RETURNING 1)"
            for i, w in enumerate(writes)]
    params = [p for w in writes for p in w[1]]
    if audits:
        rows = []
        for audit in audits:
            rows.append("(" + ", ".join(["%s"] * len(_AUDIT_FIELDS)) + ")")
            params.extend(f.get_db_prep_save(f.pre_save(audit, True), connection)
                          for f in _AUDIT_FIELDS)
        columns = ", ".join(_q(f.column) for f in _AUDIT_FIELDS)
        audit_insert = (f"INSERT INTO {_q(AuditLog._meta.db_table)} ({columns}) "
                        f"VALUES {', '.join(rows)} RETURNING {_q(pk.column)}")
    if inserted:
        # Their ids as one row: the audit rows' in the order inserted (ids from the table's
        # sequence, drawn row by row as the INSERT goes), then each Inserted's own.
        if audits:
            ctes.append(f"a AS ({audit_insert})")
        outs = ([f"ARRAY(SELECT {_q(pk.column)} FROM a ORDER BY 1)"] if audits else []) + [
            f"(SELECT * FROM w{i})" for i, _ in inserted]
        last = f"SELECT {', '.join(outs)}"
    elif audits:
        last = audit_insert
    else:
        ctes.pop()
        last = writes[-1][0]
    # A data-modifying WITH runs exactly once, whether or not the last statement reads it.
    with connection.cursor() as cursor:
        cursor.execute((f"WITH {', '.join(ctes)} " if ctes else "") + last, params)
        if inserted:
            got = list(cursor.fetchone())
            ids = got.pop(0) if audits else []
            for (_, write), value in zip(inserted, got, strict=True):
                write.receive(value)
        else:
            ids = [value for (value,) in cursor.fetchall()] if audits else []
    for audit, value in zip(audits, ids, strict=True):
        setattr(audit, pk.attname, value)
    if audits:  # as audits_save does: the run status changes among them, counted on commit
        metrics.audits_recorded(audits)


def run_update(*, run: AgentRun, fields: Sequence[str], audits: Sequence[AuditLog] = (),
               also: Sequence[Write] = ()) -> None:
    """Write ``fields`` of the locked ``run`` (``updated_at`` with them, as ``save`` does),
    the transaction's other writes (``also``) and its ``audits``, in ONE statement
    (``writes_together``). Caller holds the run's row lock (``run_lock``)."""
    writes_together(writes=[*also, update_of(run, [*fields, "updated_at"])], audits=audits)


# Text appended to a run's assistant message at a segment's end, in the database (no
# read-modify-write). Under the run's row lock (the pause / finish holds it): only the
# run's own segments write its assistant message, one at a time.
APPEND_SQL = (f"UPDATE {_q(Message._meta.db_table)} SET content = content || %s, "
              "updated_at = %s WHERE id = %s")


def append_write(*, message_id: Any, text: str, now: Any) -> Write:
    """The UPDATE that appends ``text`` to the message."""
    return APPEND_SQL, [text, now, message_id]

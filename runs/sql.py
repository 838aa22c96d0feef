"""The runs' hot-path SQL, by ``cursor.execute`` (issue 37).

Every segment pays these: the run's lock, its status change with the transaction's audit
rows. Through the ORM each is compiled on every call (a run lock 271 µs, 188 of them
compiling; 47 µs here). Columns and values come from the models' public field API
(``_meta``, ``Field.pre_save`` / ``get_db_prep_save`` / ``from_db_value``,
``Model.from_db``), so a field added to a model is read and written here as well, the
values exactly as ``save()`` sends them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from observability import metrics
from runs.models import AgentRun, AuditLog, Message

_RUN = AgentRun._meta
_RUN_FIELDS = _RUN.concrete_fields
_RUN_NAMES = [f.attname for f in _RUN_FIELDS]
# The fields whose database value needs converting (JSON arrives as text).
_RUN_CONVERTED = [(i, f) for i, f in enumerate(_RUN_FIELDS) if hasattr(f, "from_db_value")]
_AUDIT_FIELDS = [f for f in AuditLog._meta.concrete_fields if not f.primary_key]


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


def run_lock(pk: Any, *, claim: bool = False) -> AgentRun | None:
    """The run ``pk`` with its row locked until the transaction ends (None: no such run).
    ``claim``: the transaction commits without waiting for the WAL flush (``CLAIM_LOCK_SQL``).
    A malformed id raises ``ValidationError``, as the ORM's lookup does."""
    pk = _RUN.pk.to_python(pk)
    with connection.cursor() as cursor:
        cursor.execute(CLAIM_LOCK_SQL if claim else LOCK_SQL, [pk])
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row[1:] if claim else row)
    for i, field in _RUN_CONVERTED:
        values[i] = field.from_db_value(values[i], None, connection)
    return AgentRun.from_db(connection.alias, _RUN_NAMES, values)


# A data-modifying statement to run inside another's (``writes_together``): SQL, params.
Write = tuple[str, list[Any]]


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


def writes_together(*, writes: Sequence[Write] = (), audits: Sequence[AuditLog] = ()) -> None:
    """``writes`` and the INSERT of ``audits`` (in order) in ONE statement: a status change
    and its audit rows commit together, as they must, for one round trip. Each write
    must touch rows no other one touches (they all see the statement's one snapshot).
    Caller holds the run's row lock (``run_lock``)."""
    writes = list(writes)
    if not writes and not audits:
        return
    params: list[Any] = []
    pk = AuditLog._meta.pk
    if audits:
        rows = []
        for audit in audits:
            rows.append("(" + ", ".join(["%s"] * len(_AUDIT_FIELDS)) + ")")
            params.extend(f.get_db_prep_save(f.pre_save(audit, True), connection)
                          for f in _AUDIT_FIELDS)
        columns = ", ".join(_q(f.column) for f in _AUDIT_FIELDS)
        last = (f"INSERT INTO {_q(AuditLog._meta.db_table)} ({columns}) "
                f"VALUES {', '.join(rows)} RETURNING {_q(pk.column)}")
    else:
        last, params = writes.pop()
    # A data-modifying WITH runs exactly once, whether or not the last statement reads it.
    ctes = ", ".join(f"w{i} AS ({sql} RETURNING 1)" for i, (sql, _) in enumerate(writes))
    with connection.cursor() as cursor:
        cursor.execute((f"WITH {ctes} " if ctes else "") + last,
                       [p for _, ps in writes for p in ps] + list(params))
        if audits:
            for audit, (value,) in zip(audits, cursor.fetchall(), strict=True):
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

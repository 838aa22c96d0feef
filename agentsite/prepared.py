"""The hot path's statements, prepared once per connection (SQL ``PREPARE`` / ``EXECUTE``).

Postgres plans every statement it is sent. Django's psycopg cursors bind values on the
client, which is what lets a transaction's statements share a round trip
(``agentsite.compiled``), and which leaves psycopg no prepared statements to use. On
this VM planning was 0.05–0.15 ms of server time for each of the hot path's reads (the
token's user, the run holding an interrupt), more than executing them.

The statements ``agentsite.compiled`` makes once are named here the first time they
run, and a connection prepares the named ones it lacks, all in one round trip, at a
moment it is outside any transaction: when Django hands it out of the pool
(``DatabaseWrapper.init_connection_state``), or before it runs such a statement in
autocommit (a request's token lookup, say). A ``PREPARE`` Postgres refuses (a value
whose type it cannot infer) then harms nothing, and that statement is never prepared
again. From then on a statement goes to that connection as ``EXECUTE name(values)``,
the values bound on the client as before, so it still shares round trips; until then,
as plain SQL.

``DB_PREPARED_STATEMENTS=0`` turns this off: needed behind a pooler that hands one
session's statements to other server connections (PgBouncer in transaction mode).
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

_PLACEHOLDER = re.compile(r"%s|%%")

_lock = threading.Lock()
# SQL → (its name, its text with $n placeholders, how many values it takes): what each
# connection should prepare.
_named: dict[str, tuple[str, str, int]] = {}
_refused: set[str] = set()  # names Postgres would not prepare
# indeterminate_datatype, ambiguous_parameter, datatype_mismatch, undefined_function:
# what a PREPARE of a statement whose values' types Postgres cannot infer answers.
_UNTYPABLE = {"42P18", "42P08", "42804", "42883"}


def _numbered(sql: str) -> tuple[str, int]:
    """The SQL with its ``%s`` placeholders as ``$1``, ``$2`` … (``%%`` as ``%``)."""
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group() == "%%":
            return "%"
        count += 1
        return f"${count}"

    return _PLACEHOLDER.sub(number, sql), count


def statement(connection: Any, sql: str) -> str:
    """What to send for ``sql`` (values as ``%s``) on Django connection ``connection``:
    ``EXECUTE`` of its prepared form when that connection has one, else ``sql``."""
    if not settings.AGENTSITE_DB_PREPARED:
        return sql
    named = _named.get(sql)
    if named is None:
        with _lock:
            named = _named.setdefault(sql, (f"agentsite_{len(_named) + 1}", *_numbered(sql)))
    name, _, count = named
    connection.ensure_connection()  # prepared statements belong to its connection
    pg = connection.connection
    if name not in getattr(pg, "agentsite_prepared", ()):
        if not (connection.get_autocommit() and not connection.in_atomic_block):
            return sql  # inside a transaction: a refused PREPARE would end it
        prepare_missing(pg)
        if name not in getattr(pg, "agentsite_prepared", ()):
            return sql
    return f"EXECUTE {name}({', '.join(['%s'] * count)})" if count else f"EXECUTE {name}"


def prepare_missing(pg: Any) -> None:
    """Prepare on psycopg connection ``pg`` (in autocommit) the named statements it
    lacks, in one round trip; one by one if Postgres refuses one of them."""
    if not settings.AGENTSITE_DB_PREPARED or not pg.autocommit:
        return
    done: set[str] = pg.__dict__.setdefault("agentsite_prepared", set())
    failed: set[str] = pg.__dict__.setdefault("agentsite_unprepared", set())
    missing = [(sql, name) for sql, (name, _, _) in list(_named.items())
               if name not in done and name not in failed and name not in _refused]
    if not missing:
        return
    texts = [f"PREPARE {name} AS {_named[sql][1]}" for sql, name in missing]
    try:
        with pg.cursor() as cursor:
            cursor.execute("; ".join(texts))
        done.update(name for _, name in missing)
        return
    except Exception:
        # Some may have been prepared before the refused one: find out which, and
        # prepare the rest one at a time.
        pass
    try:
        with pg.cursor() as cursor:
            cursor.execute("SELECT name FROM pg_prepared_statements")
            done.update(row[0] for row in cursor.fetchall())
            for (sql, name), text in zip(missing, texts, strict=True):
                if name in done:
                    continue
                try:
                    cursor.execute(text)
                    done.add(name)
                except Exception as exc:
                    # A statement Postgres cannot type is refused everywhere; any other
                    # error (another database's tables, say) only on this connection.
                    if getattr(exc, "sqlstate", None) in _UNTYPABLE:
                        _refused.add(name)
                    failed.add(name)
                    log.info("statement not prepared (%s): %s", exc, sql[:200])
    except Exception as exc:  # a broken connection: its next user finds out
        log.warning("could not prepare statements: %s", exc)

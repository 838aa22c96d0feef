"""Every bench on a database of its own, made anew, so a sitting does not depend on what
earlier sittings left behind.

The shared database grows with every sitting: the benches' stacks run no beat, so no
checkpoint is pruned, and the floors and peers write their own. On 1 December, with
over 500,000 checkpoint rows left by earlier benches, three alternating pairs of
``bench/inprocess.py`` took 59.1 / 73.4 / 60.2 ms per cycle there against 57.3 / 64.0 /
52.6 on a fresh database (Postgres 15.7–20.7 ms of CPU per cycle against 14.2–16.7), and
``bench/agui_peer.py`` on it was slower for every variant (p50: ours 115–118 ms, the tuned
peer 67–70, the floor 35) than on nearly empty databases the same morning (87–98, 53–62,
24–28; those sittings were not interleaved).

So each bench drops and creates ``BENCH_DATABASE`` (``agentsite_bench``) on the
configured Postgres server, or the embedded one, before Django starts, and every process
it starts inherits it. Run one bench at a time. The server's user needs CREATEDB and the
``postgres`` maintenance database must exist (both true of the embedded one).
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

import psycopg
from psycopg import sql

from agentsite import embedded

_MADE = "AGENTSITE_BENCH_DATABASE_MADE"  # set for the processes a bench starts


# A bench sends thousands of requests a second from one address with one token: the
# request limits (agentsite.throttles) would measure themselves, not the site.
BENCH_LIMITS = {"THROTTLE_TOKEN_RATE": "1000000/s", "THROTTLE_ADDRESS_RATE": "1000000/s"}


def fresh_database() -> str:
    """Point DATABASE_URL at a new, empty bench database; return its name. (Also lifts
    the request limits for the bench's processes: ``BENCH_LIMITS``.)"""
    for name, value in BENCH_LIMITS.items():
        os.environ.setdefault(name, value)
    name = os.environ.get("BENCH_DATABASE", "agentsite_bench")
    if os.environ.get(_MADE) == name:  # a server this bench started: use the bench's one
        return name
    embedded.ensure_env(os.environ)  # the embedded server for any URL not given, as make run
    url = os.environ["DATABASE_URL"]
    parsed = urlparse(url)
    with psycopg.connect(parsed._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    os.environ["DATABASE_URL"] = parsed._replace(path=f"/{name}").geturl()
    os.environ[_MADE] = name
    return name


_RUN_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "runs_agentrun",
               "runs_auditlog", "runs_conversation", "runs_message", "hitl_agentinterrupt",
               "hitl_interruptvote", "hitl_webhookdelivery", "agentsite_idempotencykey")


def empty_run_tables() -> None:
    """Empty the bench database's runs and checkpoints (users and tokens stay), for a bench
    whose variants cannot be interleaved: each then starts from the same state instead of
    the rows the variants before it wrote. Only between variants: nothing may be running."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE {} CASCADE".format(
            ", ".join(connection.ops.quote_name(table) for table in _RUN_TABLES)))
    connection.close()


def use_database(name: str, *, fresh: bool = False) -> str:
    """Point Django (set up already) at the bench database ``name`` next to the configured
    one, made if missing (``fresh``: dropped and made anew), migrated; return its URL. A
    bench that seeds a large set once and keeps it across sittings uses this."""
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    with connection.cursor() as cursor:
        quoted = connection.ops.quote_name(name)
        if fresh:
            cursor.execute(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone() is None:
            cursor.execute(f"CREATE DATABASE {quoted}")
    connection.close()
    if hasattr(connection, "close_pool"):  # a pool keeps connections to the old database
        connection.close_pool()
    settings.DATABASES["default"]["NAME"] = name
    connection.settings_dict["NAME"] = name
    call_command("migrate", verbosity=0)
    d = connection.settings_dict
    auth = d["USER"] + (f":{d['PASSWORD']}" if d["PASSWORD"] else "")
    return f"postgresql://{auth}@{d['HOST']}:{d['PORT']}/{name}"

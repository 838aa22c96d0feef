"""The AG-UI door's hot-path read, by ``cursor.execute`` (issue 37): every resume pays it,
and through the ORM its join was compiled each time."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from django.db import connection

from hitl.models import AgentInterrupt
from runs.models import AgentRun

_q = connection.ops.quote_name
_RUN, _INTERRUPT = AgentRun._meta, AgentInterrupt._meta
# The runs of a thread (and agent) holding any of the interrupt ids; no lock: the decision
# locks the run it names and checks everything again under that lock.
HOLDING_SQL = (
    f"SELECT r.{_q('id')}, r.{_q('owner_id')} FROM {_q(_RUN.db_table)} r "
    f"WHERE r.{_q('thread_id')} = %s AND r.{_q('agent')} = %s AND EXISTS (SELECT 1 FROM "
    f"{_q(_INTERRUPT.db_table)} i WHERE i.{_q('run_id')} = r.{_q('id')} "
    f"AND i.{_q('interrupt_id')} = ANY(%s))")
Holding = namedtuple("Holding", "pk owner_id")


def runs_holding(*, thread_id: str, agent: str, interrupt_ids: list[str]) -> list[Any]:
    """The runs of ``thread_id`` holding any of ``interrupt_ids``, once each, as rows with
    ``pk`` and ``owner_id`` (what ``hitl.selectors.can_decide`` reads)."""
    with connection.cursor() as cursor:
        cursor.execute(HOLDING_SQL, [thread_id, agent, list(interrupt_ids)])
        return [Holding(*row) for row in cursor.fetchall()]

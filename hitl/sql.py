"""The interrupts' hot-path SQL, by ``cursor.execute`` (issue 37): statements that run
inside the run's status change (``runs.sql.writes_together``), one round trip for both."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from hitl.models import AgentInterrupt
from runs.sql import Write

_META = AgentInterrupt._meta
_TABLE = connection.ops.quote_name(_META.db_table)
Status = AgentInterrupt.Status

# decided → applied, at the end of the segment that resumed with these answers. Run
# under the run's row lock (the pause / finish holds it, ``execution.lifecycle``): a
# late answer or a cancel of the same run waits for it, so no row changes between the
# claim's read of the answers and this.
APPLIED_SQL = (f"UPDATE {_TABLE} SET status = %s, applied_at = %s "
               "WHERE run_id = %s AND applied_at IS NULL AND status = %s "
               "AND interrupt_id = ANY(%s)")


def applied_write(*, run_id: Any, interrupt_ids: Sequence[str], now: datetime) -> Write:
    """The UPDATE that marks the run's decided ``interrupt_ids`` applied."""
    return APPLIED_SQL, [Status.APPLIED, now, run_id, Status.DECIDED, list(interrupt_ids)]

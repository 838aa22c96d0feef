"""Django's ``flush``, run again when Postgres picks its TRUNCATE as a deadlock victim.

Between transactional tests the test database is flushed (one TRUNCATE of every table)
while the worker's reaper and beat's sweep keep reading it, and Postgres may pick the
TRUNCATE as the deadlock's victim. The flush is one transaction, so running it again is
safe. An app's command of the same name replaces Django's (documented: "Overriding
commands"); this one only adds the retry.
"""

from __future__ import annotations

import time

from django.core.management.base import CommandError
from django.core.management.commands.flush import Command as FlushCommand

ATTEMPTS = 5


class Command(FlushCommand):
    def handle(self, **options: object) -> None:
        for attempt in range(ATTEMPTS):
            try:
                return super().handle(**options)
            except CommandError as err:
                if "deadlock detected" not in str(err.__cause__) or attempt == ATTEMPTS - 1:
                    raise
                time.sleep(0.2)

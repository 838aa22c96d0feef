"""Indexes for the admin approval queue (what it sorts and filters on).

Plain SQL rather than ``Meta.indexes``: they serve one surface (the admin changelist),
and keeping them out of the model state keeps the model's migrations unchanged.
- ``hitl_interrupt_queue``: the queue's order within a status (pending, oldest first);
  a LIMIT 50 page walks it and stops, whatever the other filters.
- ``hitl_interrupt_deadline``: the "overdue" filter, only rows that have a deadline.
"""

from django.db import migrations

INDEXES = [
    ("hitl_interrupt_queue", "(status, created_at, id)", ""),
    ("hitl_interrupt_deadline", "(expires_at)", " WHERE expires_at IS NOT NULL"),
]


class Migration(migrations.Migration):

    dependencies = [
        ("hitl", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(
            f"CREATE INDEX IF NOT EXISTS {name} ON hitl_agentinterrupt {columns}{where};",
            reverse_sql=f"DROP INDEX IF EXISTS {name};",
        )
        for name, columns, where in INDEXES
    ]

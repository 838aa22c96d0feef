"""The admin queue's order over every status (``?status=all``): created_at, id.

Without it a page of "all" sorts every row to find the first 50 (the status index of
0002 orders only within one status). Plain SQL, as in 0002_queue_indexes.
"""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("hitl", "0003_policies"),
    ]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS hitl_interrupt_order "
            "ON hitl_agentinterrupt (created_at, id);",
            reverse_sql="DROP INDEX IF EXISTS hitl_interrupt_order;",
        ),
    ]

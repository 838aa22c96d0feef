"""An interrupt's raw value and schema as the graph gave them: a ``json`` column (keys in
the order raised) instead of ``jsonb`` (keys reordered). Rows stored before keep the order
jsonb gave them (the raised order is not recorded anywhere)."""

from django.db import migrations

import agentsite.fields


class Migration(migrations.Migration):

    dependencies = [
        ('hitl', '0006_notification_outbox'),
    ]

    operations = [
        migrations.AlterField(
            model_name='agentinterrupt',
            name='request',
            field=agentsite.fields.VerbatimJSONField(help_text='the value the graph passed to interrupt(), verbatim', null=True),
        ),
        migrations.AlterField(
            model_name='agentinterrupt',
            name='response_schema',
            field=agentsite.fields.VerbatimJSONField(blank=True, help_text="the Interrupt's response_schema (JSON Schema), when the graph gave one", null=True),
        ),
    ]

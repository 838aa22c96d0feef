"""A run counts the retries people asked for (``manual_retries``); and the retry and
failure fields left on runs that had moved on (before ``run_transition`` cleared them)
are cleared: ``retry_at`` / ``retry_reason`` outside ``retrying``, ``error_detail``
outside ``retrying`` and ``failed``. The audit rows keep what they said."""

from django.db import migrations, models


def clear_stale(apps, schema_editor):
    AgentRun = apps.get_model("runs", "AgentRun")
    (AgentRun.objects.exclude(status="retrying")
     .exclude(retry_at__isnull=True, retry_reason="")
     .update(retry_at=None, retry_reason=""))
    (AgentRun.objects.exclude(status__in=["retrying", "failed"]).exclude(error_detail="")
     .update(error_detail=""))


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0007_retries_usage'),
    ]

    operations = [
        migrations.AddField(
            model_name='agentrun',
            name='manual_retries',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(clear_stale, migrations.RunPython.noop, elidable=True),
    ]

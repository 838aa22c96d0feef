from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0008_manual_retries'),
    ]

    operations = [
        migrations.AddField(
            model_name='conversation',
            name='metadata',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='agentrun',
            name='metadata',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='agentrun',
            name='stream_modes',
            field=models.JSONField(blank=True, default=list),
        ),
    ]

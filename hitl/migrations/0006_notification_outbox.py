# Notifications as an outbox (issue 27 finding 11).

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('hitl', '0005_interrupt_formats'),
        ('runs', '0006_checkpoints_pruned'),
    ]

    operations = [
        migrations.CreateModel(
            name='Notification',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('event', models.CharField(max_length=40)),
                ('groups', models.JSONField(blank=True, default=list, help_text='escalation group names')),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('sent', 'Sent'), ('failed', 'Failed')], default='pending', max_length=20)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('attempt_log', models.JSONField(blank=True, default=list, help_text='one entry per attempt: when, and what failed')),
                ('last_error', models.TextField(blank=True)),
                ('due_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('sent_at', models.DateTimeField(blank=True, null=True)),
                ('interrupt', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='hitl.agentinterrupt')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.agentrun')),
            ],
            options={
                'ordering': ['-id'],
                'indexes': [models.Index(condition=models.Q(('status', 'pending')), fields=['due_at'], name='notification_owed')],
            },
        ),
        migrations.AddField(
            model_name='webhookdelivery',
            name='attempt_log',
            field=models.JSONField(blank=True, default=list, help_text='one entry per attempt: when, status code, error'),
        ),
        migrations.AddField(
            model_name='webhookdelivery',
            name='due_at',
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AddIndex(
            model_name='webhookdelivery',
            index=models.Index(condition=models.Q(('status', 'pending')), fields=['due_at'], name='webhook_delivery_owed'),
        ),
    ]

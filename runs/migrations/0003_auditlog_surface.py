from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0002_checkpoint_tables"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditlog",
            name="surface",
            field=models.CharField(blank=True, max_length=20),
        ),
    ]

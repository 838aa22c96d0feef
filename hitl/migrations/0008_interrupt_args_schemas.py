# The tools' argument schemas kept with a question (issue 35 item 2).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('hitl', '0007_verbatim_json'),
    ]

    operations = [
        migrations.AddField(
            model_name='agentinterrupt',
            name='args_schemas',
            field=models.JSONField(blank=True, help_text='JSON Schema of the arguments of each tool the question is about, by tool name, from the graph\'s tools (null: none known)', null=True),
        ),
    ]

"""LangGraph's checkpoint tables live in the same database, created here once."""

from django.db import migrations


def setup_checkpoint_tables(apps, schema_editor):
    from execution.checkpointer import setup_checkpoint_tables as setup

    setup()


class Migration(migrations.Migration):
    # PostgresSaver.setup() creates indexes CONCURRENTLY: no surrounding transaction.
    atomic = False

    dependencies = [("runs", "0001_initial")]

    operations = [migrations.RunPython(setup_checkpoint_tables, migrations.RunPython.noop)]

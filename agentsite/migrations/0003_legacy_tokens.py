"""DRF authtoken keys (one plain-text key per user) become hashed ``ApiToken`` rows marked
legacy, named "legacy token", with every scope (what they could do before) and no expiry,
so clients keep working; the plain-text rows are then deleted. Raw SQL: the authtoken app
is no longer installed, and its table exists only in databases made before."""

import hashlib

from django.db import migrations


def hash_legacy_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if "authtoken_token" not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("agentsite", "ApiToken")
    with connection.cursor() as cursor:
        cursor.execute("SELECT key, user_id, created FROM authtoken_token")
        rows = cursor.fetchall()
        ApiToken.objects.bulk_create([
            ApiToken(user_id=user_id, name="legacy token",
                     scope="read answer start metrics admin", legacy=True,
                     digest=hashlib.sha256(key.encode()).hexdigest(), prefix=key[:6],
                     created_at=created)
            for key, user_id, created in rows])
        cursor.execute("DELETE FROM authtoken_token")


class Migration(migrations.Migration):
    dependencies = [("agentsite", "0002_api_tokens_security_events")]

    operations = [migrations.RunPython(hash_legacy_tokens, migrations.RunPython.noop)]

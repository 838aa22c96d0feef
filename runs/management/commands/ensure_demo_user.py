from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from agentsite.models import ApiToken
from agentsite.token_auth import token_issue, token_revoke

DEMO_TOKEN = "make run (demo)"


class Command(BaseCommand):
    help = ("Create the demo user (demo / demo, a superuser) if no user exists yet; print its "
            "login and a new API token (the previous one of this command is revoked).")

    def handle(self, *args, **options) -> None:
        User = get_user_model()
        if not User.objects.exists():
            User.objects.create_superuser("demo", "demo@example.com", "demo")
            self.stdout.write("Created demo user.")
        user = User.objects.filter(username="demo").first()
        if user is None:
            self.stdout.write("Users exist already; no demo user was created.")
            return
        # Tokens are stored hashed: the one printed last time cannot be shown again.
        for old in ApiToken.objects.filter(user=user, name=DEMO_TOKEN, revoked_at=None):
            token_revoke(token_id=old.pk, owner=user, actor=None)
        _, raw = token_issue(user=user, name=DEMO_TOKEN, scopes="admin")
        self.stdout.write(f"Login: demo / demo (unless changed)   API token: {raw}")

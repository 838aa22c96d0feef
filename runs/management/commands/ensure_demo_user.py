from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Create the demo user (demo / demo, a superuser) if no user exists yet; print its login."

    def handle(self, *args, **options) -> None:
        User = get_user_model()
        if not User.objects.exists():
            User.objects.create_superuser("demo", "demo@example.com", "demo")
            self.stdout.write("Created demo user.")
        user = User.objects.filter(username="demo").first()
        if user is None:
            self.stdout.write("Users exist already; no demo user was created.")
            return
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(f"Login: demo / demo (unless changed)   API token: {token.key}")

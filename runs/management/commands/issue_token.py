from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Print the API token of a user, creating it if needed (--rotate replaces it)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--rotate", action="store_true")

    def handle(self, *args, username: str, rotate: bool, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        if rotate:
            Token.objects.filter(user=user).delete()
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)

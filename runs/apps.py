from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from runs import checks  # noqa: F401 - registers the agent catalog's check
        from streams.access import connect

        connect()  # open streams hear of account changes (access may be lost)

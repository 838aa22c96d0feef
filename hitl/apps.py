from django.apps import AppConfig


class HitlConfig(AppConfig):
    name = "hitl"
    verbose_name = "Human in the loop"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from hitl.notify import on_run_finished
        from runs.signals import run_finished

        run_finished.connect(on_run_finished, dispatch_uid="hitl.notify.run_finished")

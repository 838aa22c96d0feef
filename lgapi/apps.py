from django.apps import AppConfig


class LgapiConfig(AppConfig):
    name = "lgapi"
    verbose_name = "LangGraph Platform API"

    def ready(self) -> None:
        from lgapi.webhook import on_run_finished
        from runs.signals import run_finished

        run_finished.connect(on_run_finished, dispatch_uid="lgapi.webhook.run_finished")

from django.apps import AppConfig


class AgentsiteConfig(AppConfig):
    name = "agentsite"
    verbose_name = "agentsite: access and security"

    def ready(self) -> None:
        import agentsite.checks  # noqa: F401  registers check --deploy's middleware checks
        from agentsite import security_audit

        security_audit.connect()  # security events of logins, lockouts, users' permissions

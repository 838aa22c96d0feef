"""What the restructure kept: queued task names, the permission, the settings' dotted paths."""

from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from agentsite.celery import app


def test_the_worker_task_keeps_its_celery_name():
    from execution.tasks import run_execute
    from runs.services import EXECUTE_TASK

    # Messages queued before the move name the task by this string.
    assert run_execute.name == EXECUTE_TASK == "runs.tasks.run_execute"
    assert app.tasks[EXECUTE_TASK].run.__module__ == "execution.tasks"


def test_the_decide_permission_keeps_its_name():
    from hitl.models import AgentInterrupt
    from hitl.selectors import DECIDE_PERMISSION

    assert DECIDE_PERMISSION == "hitl.decide_interrupt"
    assert ("decide_interrupt", AgentInterrupt._meta.permissions[0][1]) in [
        tuple(p) for p in AgentInterrupt._meta.permissions]


def test_dotted_paths_in_settings_import():
    for path in (settings.EVENTSTREAM_STORAGE_CLASS, settings.EVENTSTREAM_CHANNELMANAGER_CLASS,
                 settings.ASGI_APPLICATION):
        assert import_string(path)
    for path in settings.SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"].values():
        if isinstance(path, str):  # module.Class.Inner
            module, cls, inner = path.rsplit(".", 2)
            assert getattr(import_string(f"{module}.{cls}"), inner)
    for module in settings.AGENTSITE_AGENT_MODULES:
        __import__(module)


def test_agents_register_from_their_new_home():
    from runs import registry

    assert {"dev", "showcase", "approvals", "tasklist", "assistant", "stock"} <= {
        a.name for a in registry.all_agents()}

import os

from celery import Celery

from agentsite import timing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

app = Celery("agentsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The worker's tasks live in `execution` (not a Django app, so named here).
app.autodiscover_tasks(["execution"])

if timing.enabled:  # benchmarks only (AGENTSITE_TIMING_LOG): stamp a task's dispatch
    from celery import signals

    def _run_id(args: object) -> str:
        return str(args[0]) if isinstance(args, (list, tuple)) and args else "?"

    @signals.before_task_publish.connect(weak=False)
    def _publishing(body: object = None, **_: object) -> None:
        timing.mark(_run_id(body[0] if isinstance(body, (list, tuple)) else None), "enqueue")

    @signals.after_task_publish.connect(weak=False)
    def _published(body: object = None, **_: object) -> None:
        timing.mark(_run_id(body[0] if isinstance(body, (list, tuple)) else None), "enqueued")

    @signals.task_received.connect(weak=False)
    def _received(request: object = None, **_: object) -> None:
        timing.mark(_run_id(getattr(request, "args", None)), "received")

    @signals.task_prerun.connect(weak=False)
    def _prerun(args: object = None, **_: object) -> None:
        timing.mark(_run_id(args), "task_start")

    @signals.task_postrun.connect(weak=False)
    def _postrun(args: object = None, **_: object) -> None:
        timing.mark(_run_id(args), "task_end")

# Full collections skip what the worker loaded at startup (why: agentsite/startup_gc.py):
# in the worker process once it is ready, and in each child of a prefork pool.
from celery.signals import worker_process_init, worker_ready  # noqa: E402

from agentsite.startup_gc import freeze_startup_objects  # noqa: E402

worker_ready.connect(lambda **_: freeze_startup_objects(), weak=False)
worker_process_init.connect(lambda **_: freeze_startup_objects(), weak=False)

# Heartbeats for /healthz, written by the worker process (Celery signals).
from celery.signals import beat_init  # noqa: E402

import agentsite.heartbeat  # noqa: E402, F401

# Metrics: the enqueue time on every task message, pool children's files on exit.
import observability.celery_hooks  # noqa: E402, F401
from observability import tracing  # noqa: E402

# Traces (OTEL_* says where to, else off): in each pool child, after the fork, as the
# Celery instrumentation asks; and in beat.
worker_process_init.connect(lambda **_: tracing.configure(service="agentsite-worker"),
                            weak=False)
beat_init.connect(lambda **_: tracing.configure(service="agentsite-beat"), weak=False)

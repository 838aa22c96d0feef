import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

app = Celery("agentsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The worker's tasks live in `execution` (not a Django app, so named here).
app.autodiscover_tasks(["execution"])

# Heartbeats for /healthz, written by the worker process (Celery signals).
import agentsite.heartbeat  # noqa: E402, F401

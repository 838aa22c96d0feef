"""Celery tasks of the hitl layer: notifications and webhook deliveries. Thin: each
calls ``hitl.notify``."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections

from hitl import notify

log = logging.getLogger(__name__)


@shared_task(name=notify.NOTIFY_TASK, ignore_result=True)
def notify_event(event: str, run_id: str, interrupt_pk: str | None = None,
                 groups: list[str] | None = None) -> None:
    close_old_connections()
    notify.deliver(event=event, run_id=run_id, interrupt_pk=interrupt_pk, groups=groups)


@shared_task(name=notify.DELIVER_TASK, bind=True, ignore_result=True,
             max_retries=settings.HITL_WEBHOOK_MAX_RETRIES)
def webhook_deliver(self, delivery_id: int) -> None:
    close_old_connections()
    if notify.deliver_webhook(delivery_id) is False:
        if self.request.retries < self.max_retries:
            raise self.retry(countdown=notify.backoff(self.request.retries))
        log.warning("webhook delivery %s failed after %d attempts", delivery_id,
                    self.request.retries + 1)
        notify.delivery_failed(delivery_id)

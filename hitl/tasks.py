"""Celery tasks of the hitl layer: notifications and webhook deliveries. Thin: each
calls ``hitl.notify``. Both take the id of a row (the outbox ``Notification``, the
``WebhookDelivery``) that says what is owed, so the reaper can send them again."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections

from hitl import notify

log = logging.getLogger(__name__)


@shared_task(name=notify.NOTIFY_TASK, bind=True, ignore_result=True,
             max_retries=settings.HITL_WEBHOOK_MAX_RETRIES)
def notify_event(self, notification_id: int | None = None, **before_outbox: Any) -> None:
    close_old_connections()
    if notification_id is None:
        # A message with no notification id carries the event itself (event, run_id, ...:
        # what a deployment without the outbox queues): delivered from its arguments. This
        # path can go once no such message can still be queued (the broker's retention).
        notify.deliver(**before_outbox)
        return
    try:
        notify.notification_send(notification_id)
    except Exception as exc:  # the attempt is logged on the row
        if self.request.retries < self.max_retries:
            raise self.retry(countdown=notify.backoff(self.request.retries), exc=exc) from exc
        log.warning("notification %s failed after %d attempts: %s", notification_id,
                    self.request.retries + 1, exc)
        notify.notification_failed(notification_id)


# max_retries=None: Celery does not count; the row's attempts are the budget.
@shared_task(name=notify.DELIVER_TASK, bind=True, ignore_result=True, max_retries=None)
def webhook_deliver(self, delivery_id: int) -> None:
    close_old_connections()
    if notify.deliver_webhook(delivery_id) is False:
        # The row's attempts are the budget: a resend by the reaper does not start over.
        delay = notify.retry_in(delivery_id)
        if delay is not None:
            raise self.retry(countdown=delay)
        log.warning("webhook delivery %s failed after %d attempts", delivery_id,
                    settings.HITL_WEBHOOK_MAX_RETRIES + 1)
        notify.delivery_failed(delivery_id)

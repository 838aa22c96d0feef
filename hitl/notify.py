"""Telling people: an email to the assignees (or the requester when there are none) and a
signed JSON POST to the agent's webhooks, when an interrupt is created or escalated and
when a run ends.

A notice is a row: services call :func:`on_commit`, which writes a ``Notification`` (the
outbox) in the caller's transaction and enqueues the ``hitl.notify`` task after commit;
the task (``hitl.tasks``) sends the emails, writes one ``WebhookDelivery`` per webhook
and marks the notification sent, in one transaction; each delivery is POSTed by its own
task with retries and exponential backoff (:func:`deliver_webhook` makes one attempt).
Every attempt is appended to the row's ``attempt_log``. A task lost to a broker outage
leaves its row pending: the reaper sends it again (:func:`owed_resend`). Nothing here
touches the network inside a transaction.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from datetime import datetime, timedelta
from typing import Any

import httpx
from celery import current_app as celery_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Exists, F, Func, JSONField, OuterRef, Value
from django.urls import reverse
from django.utils import timezone

from agentsite.outbound import outbound_client
from hitl.models import AgentInterrupt, AgentWebhook, Notification, WebhookDelivery
from observability import metrics
from runs.models import AgentRun
from runs.sql import insert_returning

log = logging.getLogger(__name__)

NOTIFY_TASK = "hitl.notify"
DELIVER_TASK = "hitl.webhook_deliver"
SIGNATURE_HEADER = "X-Agentsite-Signature"
EVENTS = ("interrupt.created", "interrupt.escalated", "run.finished")


def send_task(name: str, *args: Any, **kwargs: Any) -> None:
    # Called on commit: a broker failure must not raise into a caller whose change is
    # committed (a worker would fail a run it just paused). Logged; the row it would
    # have sent stays pending and the reaper sends it again (``owed_resend``).
    try:
        celery_app.send_task(name, args=args, kwargs=kwargs)
    except Exception as exc:
        log.warning("task %s not sent (broker unavailable): %s", name, exc)


def on_run_finished(sender: type, *, run: AgentRun, writes: list[Any] | None = None,
                    **kwargs: Any) -> None:
    """``runs.signals.run_finished``: tell the assignees (or the requester) on commit
    (``writes``: the run's status change's, which the outbox row joins)."""
    on_commit("run.finished", run=run, writes=writes)


def on_commit(event: str, *, run: AgentRun, interrupt: AgentInterrupt | None = None,
              groups: list[str] | None = None, writes: list[Any] | None = None) -> None:
    """Owe a notice about ``event``: its outbox row is written in the current transaction
    (it commits with the change that makes it due), its task sent once that commits.
    ``writes``: the caller's writes for one statement (``runs.sql.writes_together``), which
    the row's INSERT joins (its id comes back before commit); else it is inserted now."""
    row = Notification(event=event, run_id=run.pk,
                       interrupt_id=interrupt.pk if interrupt else None, groups=groups or [])
    if writes is None:
        row.save(force_insert=True)
    else:
        writes.append(insert_returning(row))
    # robust: a broker that is down delays the notice (the reaper resends it), and never
    # fails the caller's committed change.
    transaction.on_commit(lambda: send_task(NOTIFY_TASK, row.pk), robust=True)


# ``AgentRun.objects.annotate(**QUESTION_FACTS)``: what ``anyone_for`` needs, read with
# the run.
QUESTION_FACTS = {
    "notify_owner_email": F("owner__email"),
    "notify_agent_hooked": Exists(AgentWebhook.objects.filter(agent=OuterRef("agent"),
                                                              active=True)),
}
# ``anyone_for_end`` needs the assignments too.
RUN_FACTS = {
    **QUESTION_FACTS,
    "notify_run_assigned": Exists(AgentInterrupt.assignees.through.objects.filter(
        agentinterrupt__run=OuterRef("pk"))) | Exists(
        AgentInterrupt.assigned_groups.through.objects.filter(
            agentinterrupt__run=OuterRef("pk"))),
}


def anyone_for(run: AgentRun) -> bool:
    """Would an unassigned question of the run reach anyone: the requester by email, or
    a webhook of the agent? Asked instead of sending a task that would find nobody; from
    the run's ``QUESTION_FACTS`` when it was read with them, else one query."""
    if hasattr(run, "notify_agent_hooked"):
        return bool(run.notify_owner_email) or bool(run.notify_agent_hooked)
    found = (AgentRun.objects.filter(pk=run.pk).annotate(**QUESTION_FACTS)
             .values_list("notify_owner_email", "notify_agent_hooked").first())
    return bool(found) and (bool(found[0]) or bool(found[1]))


def anyone_for_end(run: AgentRun) -> bool:
    """Would the end of the run reach anyone (``recipients`` for ``run.finished``): an
    assignee of one of its questions, else the requester by email; or a webhook of the
    agent; or the run's own webhook (``AgentRun.webhook``). From the run's ``RUN_FACTS``:
    the run must have been read with them."""
    return (bool(run.notify_run_assigned) or bool(run.notify_owner_email)
            or bool(run.notify_agent_hooked) or bool(run.webhook))


def sign(secret: str, body: bytes) -> str:
    """The signature header's value: ``sha256=<hex HMAC-SHA256 of the body>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _url(path: str) -> str:
    return settings.AGENTSITE_BASE_URL.rstrip("/") + path


def decide_url(interrupt: AgentInterrupt) -> str:
    return _url(reverse("admin:hitl_agentinterrupt_change", args=[interrupt.pk]))


def chat_url(run: AgentRun) -> str:
    return _url(reverse("pages:chat", args=[run.conversation_id]))


def recipients(event: str, run: AgentRun, interrupt: AgentInterrupt | None,
               groups: list[str] | None) -> list[Any]:
    """Who is told: the escalation groups' members; else the assignees (users and group
    members) of the interrupt, or of the run's interrupts when the run ended; else the
    requester."""
    User = get_user_model()
    if event == "interrupt.escalated" and groups:
        return list(User.objects.filter(groups__name__in=groups, is_active=True).distinct())
    rows = [interrupt] if interrupt is not None else list(run.interrupts.all())
    users = User.objects.filter(is_active=True).filter(
        pk__in=[u.pk for r in rows for u in r.assignees.all()]) | User.objects.filter(
        is_active=True, groups__in=[g.pk for r in rows for g in r.assigned_groups.all()])
    found = list(users.distinct())
    return found or [run.owner]


def payload(event: str, run: AgentRun, interrupt: AgentInterrupt | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "event": event, "sent_at": timezone.now().isoformat(),
        "run": {"id": str(run.id), "agent": run.agent, "status": run.status,
                "thread_id": run.thread_id, "owner": run.owner.get_username(),
                "url": chat_url(run)}}
    if interrupt is not None:
        body["interrupt"] = {
            "id": str(interrupt.pk), "interrupt_id": interrupt.interrupt_id,
            "kind": interrupt.kind, "message": interrupt.message, "status": interrupt.status,
            "expires_at": interrupt.expires_at.isoformat() if interrupt.expires_at else None,
            "assignees": [u.get_username() for u in interrupt.assignees.all()],
            "groups": [g.name for g in interrupt.assigned_groups.all()],
            "decide_url": decide_url(interrupt)}
    return body


def _email(event: str, run: AgentRun, interrupt: AgentInterrupt | None) -> tuple[str, str]:
    if event == "run.finished":
        return (f"[agentsite] {run.agent} run {run.status}",
                f"The {run.agent} run {run.id} ended: {run.status}.\n\n"
                f"Conversation: {chat_url(run)}\n")
    assert interrupt is not None
    what = "Escalated to you" if event == "interrupt.escalated" else "Waiting for an answer"
    deadline = (f"\nDeadline: {interrupt.expires_at.isoformat()}" if interrupt.expires_at
                else "")
    return (f"[agentsite] {what}: {interrupt.message or interrupt.kind}"[:200],
            f"{run.owner.get_username()}'s {run.agent} run asks ({interrupt.kind}):\n\n"
            f"{interrupt.message}\n{deadline}\n\nDecide: {decide_url(interrupt)}\n"
            f"Conversation: {chat_url(run)}\n")


def log_entry(**fields: Any) -> Any:
    """``attempt_log`` with one more entry (``{"at": now, **fields}``), appended in the
    UPDATE itself (jsonb ``||``): no read of the log first."""
    entry = {"at": timezone.now().isoformat(), **fields}
    return Func(F("attempt_log"), Value([entry], output_field=JSONField()),
                template="%(expressions)s", arg_joiner=" || ", output_field=JSONField())


def notification_send(notification_id: int) -> dict[str, int] | None:
    """One attempt at an owed notification (the ``hitl.notify`` task's body): the
    emails, the webhook deliveries, and the row marked sent. None when it is not pending
    (sent already by a duplicate task, or failed). Raises on failure, the attempt logged:
    the task retries."""
    item = (Notification.objects.filter(pk=notification_id, status=Notification.Status.PENDING)
            .values("event", "run_id", "interrupt_id", "groups").first())
    if item is None:
        return None
    try:
        return deliver(event=item["event"], run_id=str(item["run_id"]),
                       interrupt_pk=str(item["interrupt_id"]) if item["interrupt_id"] else None,
                       groups=item["groups"] or None, notification_id=notification_id)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:2000]
        Notification.objects.filter(pk=notification_id).update(
            attempts=F("attempts") + 1, last_error=error,
            attempt_log=log_entry(ok=False, error=error))
        raise


def notification_failed(notification_id: int) -> None:
    """No attempts left."""
    Notification.objects.filter(pk=notification_id,
                                status=Notification.Status.PENDING).update(
        status=Notification.Status.FAILED)


def deliver(*, event: str, run_id: str, interrupt_pk: str | None = None,
            groups: list[str] | None = None,
            notification_id: int | None = None) -> dict[str, int]:
    """Send the emails and queue the webhook deliveries of one event (the task's body);
    with ``notification_id``, mark that outbox row sent in the deliveries' transaction."""
    run = AgentRun.objects.select_related("owner").filter(pk=run_id).first()
    if run is None:
        return {"emails": 0, "webhooks": 0}
    interrupt = (AgentInterrupt.objects.prefetch_related("assignees", "assigned_groups")
                 .filter(pk=interrupt_pk).first() if interrupt_pk else None)
    addresses = sorted({u.email for u in recipients(event, run, interrupt, groups) if u.email})
    sent = 0
    unsent: list[str] = []
    if addresses:
        subject, text = _email(event, run, interrupt)
        # One message per person: no one sees who else was told.
        for address in addresses:
            try:
                sent += send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, [address])
            except Exception as exc:  # noqa: BLE001 - a mail server down must not stop the webhooks
                log.exception("notification email to %s failed", address)
                unsent.append(f"{address}: {type(exc).__name__}: {exc}"[:300])
        metrics.notification_done(channel="email", outcome="delivered", count=sent)
        metrics.notification_done(channel="email", outcome="failed", count=len(unsent))
    body = payload(event, run, interrupt)
    deliveries = []
    with transaction.atomic():
        if notification_id is not None:
            # Locked: a duplicate task (the reaper's resend racing the original) finds it
            # sent and creates no second set of deliveries.
            owed = list(Notification.objects.select_for_update().filter(
                pk=notification_id, status=Notification.Status.PENDING)
                .values_list("pk", flat=True))
            if not owed:
                return {"emails": sent, "webhooks": 0}
            error = "; ".join(unsent)
        for hook in AgentWebhook.objects.filter(agent=run.agent, active=True):
            deliveries.append(WebhookDelivery.objects.create(webhook=hook, event=event,
                                                             body=body))
        if notification_id is not None:
            Notification.objects.filter(pk=notification_id).update(
                status=Notification.Status.SENT, sent_at=timezone.now(),
                attempts=F("attempts") + 1, last_error=error,
                attempt_log=log_entry(ok=True, emails=sent, webhooks=len(deliveries),
                                      error=error))
        for item in deliveries:
            transaction.on_commit(lambda pk=item.pk: send_task(DELIVER_TASK, pk), robust=True)
    return {"emails": sent, "webhooks": len(deliveries)}


def webhook_owe(*, url: str, event: str, body: dict[str, Any]) -> WebhookDelivery:
    """Owe one POST of ``body`` to ``url`` (a run's own webhook), in the caller's
    transaction: its row commits with the change that makes it due, its task is sent on
    commit; retried, logged and resent by the reaper as the agents' webhooks are."""
    item = WebhookDelivery.objects.create(url=url, event=event, body=body)
    transaction.on_commit(lambda: send_task(DELIVER_TASK, item.pk), robust=True)
    return item


def deliver_webhook(delivery_id: int) -> bool | None:
    """One POST attempt of a delivery: True delivered, False to retry, None nothing to do.
    The row's attempt count is the budget (``retry_in``), whichever task made them."""
    # The attempt's own time first: the reaper leaves a delivery alone while its POST may
    # still be under way (up to the timeout).
    busy_until = timezone.now() + timedelta(seconds=settings.HITL_WEBHOOK_TIMEOUT)
    if not WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING
                                          ).update(due_at=busy_until):
        return None
    item = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if item is None:
        return None
    raw = json.dumps(item.body, separators=(",", ":"), sort_keys=True).encode()
    url, secret = ((item.webhook.url, item.webhook.secret) if item.webhook is not None
                   else (item.url, settings.RUN_WEBHOOK_SECRET))
    headers = {"Content-Type": "application/json",
               "X-Agentsite-Event": item.event, "X-Agentsite-Delivery": str(item.pk)}
    if secret:
        headers[SIGNATURE_HEADER] = sign(secret, raw)
    code, error = None, ""
    try:
        # Not to internal addresses (agentsite.outbound: OutboundRefused, a failed attempt).
        with outbound_client(timeout=settings.HITL_WEBHOOK_TIMEOUT) as client:
            response = client.post(url, content=raw, headers=headers)
        code = response.status_code
    except httpx.HTTPError as err:
        error = f"{type(err).__name__}: {err}"
    ok = code is not None and 200 <= code < 300
    error = error or ("" if ok else f"HTTP {code}")
    fields: dict[str, Any] = {"attempts": F("attempts") + 1, "last_status_code": code,
                              "last_error": error,
                              "attempt_log": log_entry(ok=ok, status_code=code, error=error)}
    if ok:
        fields.update(status=WebhookDelivery.Status.DELIVERED, delivered_at=timezone.now())
    WebhookDelivery.objects.filter(pk=item.pk).update(**fields)
    metrics.notification_done(channel="webhook", outcome="delivered" if ok else "failed")
    return ok


def retry_in(delivery_id: int) -> float | None:
    """After a failed attempt: seconds until the next one (its time stamped on the row,
    so the reaper leaves it to the retry until then), or None when the attempts
    (1 + ``HITL_WEBHOOK_MAX_RETRIES``) are spent."""
    attempts = (WebhookDelivery.objects.filter(pk=delivery_id)
                .values_list("attempts", flat=True).first()) or 0
    if attempts > settings.HITL_WEBHOOK_MAX_RETRIES:
        return None
    delay = backoff(attempts - 1)
    WebhookDelivery.objects.filter(pk=delivery_id).update(
        due_at=timezone.now() + timedelta(seconds=delay))
    return delay


def delivery_failed(delivery_id: int) -> None:
    """No attempts left."""
    WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING).update(
        status=WebhookDelivery.Status.FAILED)


def backoff(retries: int) -> float:
    """Seconds before retry number ``retries + 1``: base, 2×base, 4×base …"""
    return settings.HITL_WEBHOOK_BACKOFF * (2 ** max(retries, 0))


def owed_resend(now: datetime | None = None, batch: int = 200) -> dict[str, int]:
    """Send again the tasks of notifications and webhook deliveries still pending
    ``AGENTSITE_REQUEUE_AFTER_SECONDS`` after they were due: their task was never sent
    (the broker was down at commit, or at a retry) or the broker lost it. Called by the
    reaper. Rows are stamped before the sends (``SKIP LOCKED``: two reapers do not
    resend the same row in a sweep); a duplicate task is harmless (a notification is
    marked sent under its lock; a delivery is POSTed while pending: at least once)."""
    now = now or timezone.now()
    waited = now - timedelta(seconds=settings.AGENTSITE_REQUEUE_AFTER_SECONDS)
    with transaction.atomic():
        notices = _stamp_owed(Notification, waited, now, batch)
        deliveries = _stamp_owed(WebhookDelivery, waited, now, batch)
    # After commit: no network call inside the transaction.
    for pk in notices:
        send_task(NOTIFY_TASK, pk)
    for pk in deliveries:
        send_task(DELIVER_TASK, pk)
    return {"notifications": len(notices), "deliveries": len(deliveries)}


def _stamp_owed(model: type[Notification] | type[WebhookDelivery], waited: datetime,
                now: datetime, batch: int) -> list[int]:
    pks = list(model.objects.select_for_update(skip_locked=True)
               .filter(status="pending", due_at__lt=waited)
               .order_by("due_at").values_list("pk", flat=True)[:batch])
    if pks:
        model.objects.filter(pk__in=pks).update(due_at=now)  # the next try later
        log.warning("%d %s pending with no task, sending again", len(pks),
                    model._meta.verbose_name_plural)
    return pks

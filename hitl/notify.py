"""Telling people: an email to the assignees (or the requester when there are none) and a
signed JSON POST to the agent's webhooks, when an interrupt is created or escalated and
when a run ends.

Nothing here touches the network inside a transaction: services call :func:`on_commit`,
which enqueues the ``hitl.notify`` task after commit; the task (``hitl.tasks``) sends the
emails and writes one ``WebhookDelivery`` per webhook, each POSTed by its own task with
retries and exponential backoff (:func:`deliver_webhook` makes one attempt).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Any

import httpx
from celery import current_app as celery_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from hitl.models import AgentInterrupt, AgentWebhook, WebhookDelivery
from runs.models import AgentRun

log = logging.getLogger(__name__)

NOTIFY_TASK = "hitl.notify"
DELIVER_TASK = "hitl.webhook_deliver"
SIGNATURE_HEADER = "X-Agentsite-Signature"
EVENTS = ("interrupt.created", "interrupt.escalated", "run.finished")


def send_task(name: str, *args: Any, **kwargs: Any) -> None:
    # Called on commit: a broker failure must not raise into a caller whose change is
    # committed (a worker would fail a run it just paused). Logged, and lost.
    try:
        celery_app.send_task(name, args=args, kwargs=kwargs)
    except Exception as exc:
        log.warning("task %s not sent (broker unavailable): %s", name, exc)


def on_run_finished(sender: type, *, run: AgentRun, **kwargs: Any) -> None:
    """``runs.signals.run_finished``: tell the assignees (or the requester) on commit."""
    on_commit("run.finished", run=run)


def on_commit(event: str, *, run: AgentRun, interrupt: AgentInterrupt | None = None,
              groups: list[str] | None = None) -> None:
    """Notify about ``event`` once the current transaction commits."""
    kwargs = {"event": event, "run_id": str(run.id),
              "interrupt_pk": str(interrupt.pk) if interrupt is not None else None,
              "groups": groups}
    # robust: a broker that is down loses the notification (logged), not the caller's answer.
    transaction.on_commit(lambda: send_task(NOTIFY_TASK, **kwargs), robust=True)


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
    agent. From the run's ``RUN_FACTS``: the run must have been read with them."""
    return (bool(run.notify_run_assigned) or bool(run.notify_owner_email)
            or bool(run.notify_agent_hooked))


def sign(secret: str, body: bytes) -> str:
    """The signature header's value: ``sha256=<hex HMAC-SHA256 of the body>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _url(path: str) -> str:
    return settings.AGENTSITE_BASE_URL.rstrip("/") + path


def decide_url(interrupt: AgentInterrupt) -> str:
    return _url(f"/admin/hitl/agentinterrupt/{interrupt.pk}/change/")


def chat_url(run: AgentRun) -> str:
    return _url(f"/c/{run.conversation_id}/")


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


def deliver(*, event: str, run_id: str, interrupt_pk: str | None = None,
            groups: list[str] | None = None) -> dict[str, int]:
    """Send the emails and queue the webhook deliveries of one event (the task's body)."""
    run = AgentRun.objects.select_related("owner").filter(pk=run_id).first()
    if run is None:
        return {"emails": 0, "webhooks": 0}
    interrupt = (AgentInterrupt.objects.prefetch_related("assignees", "assigned_groups")
                 .filter(pk=interrupt_pk).first() if interrupt_pk else None)
    addresses = sorted({u.email for u in recipients(event, run, interrupt, groups) if u.email})
    sent = 0
    if addresses:
        subject, text = _email(event, run, interrupt)
        # One message per person: no one sees who else was told.
        for address in addresses:
            try:
                sent += send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, [address])
            except Exception:  # noqa: BLE001 - a mail server down must not stop the webhooks
                log.exception("notification email to %s failed", address)
    body = payload(event, run, interrupt)
    deliveries = []
    with transaction.atomic():
        for hook in AgentWebhook.objects.filter(agent=run.agent, active=True):
            deliveries.append(WebhookDelivery.objects.create(webhook=hook, event=event,
                                                             body=body))
        for item in deliveries:
            transaction.on_commit(lambda pk=item.pk: send_task(DELIVER_TASK, pk), robust=True)
    return {"emails": sent, "webhooks": len(deliveries)}


def deliver_webhook(delivery_id: int) -> bool | None:
    """One POST attempt of a delivery: True delivered, False to retry, None nothing to do."""
    item = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if item is None or item.status != WebhookDelivery.Status.PENDING:
        return None
    raw = json.dumps(item.body, separators=(",", ":"), sort_keys=True).encode()
    headers = {"Content-Type": "application/json", SIGNATURE_HEADER: sign(item.webhook.secret, raw),
               "X-Agentsite-Event": item.event, "X-Agentsite-Delivery": str(item.pk)}
    code, error = None, ""
    try:
        response = httpx.post(item.webhook.url, content=raw, headers=headers,
                              timeout=settings.HITL_WEBHOOK_TIMEOUT)
        code = response.status_code
    except httpx.HTTPError as err:
        error = f"{type(err).__name__}: {err}"
    ok = code is not None and 200 <= code < 300
    fields = {"attempts": item.attempts + 1, "last_status_code": code,
              "last_error": error or ("" if ok else f"HTTP {code}")}
    if ok:
        fields.update(status=WebhookDelivery.Status.DELIVERED, delivered_at=timezone.now())
    WebhookDelivery.objects.filter(pk=item.pk).update(**fields)
    return ok


def delivery_failed(delivery_id: int) -> None:
    """No attempts left."""
    WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING).update(
        status=WebhookDelivery.Status.FAILED)


def backoff(retries: int) -> float:
    """Seconds before retry number ``retries + 1``: base, 2×base, 4×base …"""
    return settings.HITL_WEBHOOK_BACKOFF * (2 ** retries)

"""One input guard for every HTML form surface (chat pages, admin, login), as
``agentsite.parsers`` is for the JSON API.

Before any view runs, the URL's captured values, the query string and a form post are
checked; the first problem is a 400 naming the field, and nothing is written:
- NUL characters (Postgres text and jsonb cannot hold them: a DataError, i.e. a 500, at
  the first query that carries one) and lone UTF-16 surrogates;
- size: an interrupt answer's fields up to ``ANSWER_MAX_BYTES`` (the limit the API and
  AG-UI hold; ``hitl.card_answer`` checks the assembled answer too), any other
  field up to ``FORM_FIELD_MAX_BYTES``;
- an admin bulk action's ticked ids must be ids of the changelist's model (Django's
  ``response_action`` filters by them before any action runs: "not a valid UUID").

The API and AG-UI (``PARSED_ELSEWHERE``) are left to their parsers; the LangGraph API is
guarded here (its query strings and path values) and refused in its JSON shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.apps import apps
from django.conf import settings
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from agentsite.parsers import _bad_string
from agentsite.surfaces import json_surface

# Views whose form post is an interrupt answer (the card on the chat page, the admin
# decide page): their fields may be as large as an answer.
ANSWER_VIEWS = frozenset({"pages:answer", "admin:hitl_agentinterrupt_change"})
# Their parsers (``agentsite.parsers``, DRF's and AG-UI's) check every value they take.
PARSED_ELSEWHERE = ("/api/", "/agui/")
# Field names shown in full up to this length, cut beyond (a hostile name can be long).
NAME_SHOWN = 80


class Refused(Exception):
    """A form field the guard refuses: ``field`` and what is wrong with it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


def _shown(name: str) -> str:
    """A name or value fit to show: NUL and lone surrogates escaped, cut when long."""
    name = name.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\u0000")
    return name if len(name) <= NAME_SHOWN else name[:NAME_SHOWN] + "…"


def check_text(field: str, value: str, limit: int, setting: str = "") -> None:
    """Raise Refused when ``value`` holds a NUL or a lone surrogate, or is over ``limit``
    bytes of UTF-8 (``setting``: the limit's name, to say so)."""
    problem = _bad_string(value)
    if problem:
        raise Refused(_shown(field), problem)
    size = len(value.encode())
    if size > limit:
        named = f" ({setting})" if setting else ""
        raise Refused(_shown(field), f"is {size} bytes; at most {limit}{named}")


def check_items(items: Iterable[tuple[str, list[str]]], limit: int, *,
                where: str = "", setting: str = "") -> None:
    """Check a QueryDict's ``lists()``: every name and every value (Refused on the first)."""
    for name, values in items:
        field = f"{where}{name}"
        problem = _bad_string(name)
        if problem:
            raise Refused(_shown(field), f"its name {problem}")
        for value in values:
            check_text(field, value, limit, setting)


def _admin_model(request: HttpRequest) -> Any:
    """The model of an admin changelist URL (``admin:<app>_<model>_changelist``), or None."""
    match = request.resolver_match
    if match is None or match.app_name != "admin" or not match.url_name \
            or not match.url_name.endswith("_changelist"):
        return None
    for model in apps.get_models():
        if f"{model._meta.app_label}_{model._meta.model_name}_changelist" == match.url_name:
            return model
    return None


def _check_selected(request: HttpRequest) -> None:
    model = _admin_model(request)
    if model is None:
        return
    pk = model._meta.pk
    for value in request.POST.getlist(ACTION_CHECKBOX_NAME):
        try:
            pk.to_python(value)
        except ValidationError:
            raise Refused(ACTION_CHECKBOX_NAME, f"holds “{_shown(value)}”, not the id "
                          f"of any {model._meta.verbose_name}") from None


def check_request(request: HttpRequest, view_kwargs: dict[str, Any],
                  view_args: Iterable[Any] = ()) -> None:
    """Raise Refused for the first field of this request the guard refuses."""
    match = request.resolver_match
    answer = match is not None and match.view_name in ANSWER_VIEWS
    limit, name = settings.FORM_FIELD_MAX_BYTES, "FORM_FIELD_MAX_BYTES"
    for key, value in view_kwargs.items():
        if isinstance(value, str):
            check_text(key, value, limit, name)
    for i, value in enumerate(view_args):
        if isinstance(value, str):
            check_text(f"path[{i}]", value, limit, name)
    check_items(request.GET.lists(), limit, setting=name)
    if request.method == "POST":
        if answer and settings.ANSWER_MAX_BYTES > limit:
            limit, name = settings.ANSWER_MAX_BYTES, "ANSWER_MAX_BYTES"
        check_items(request.POST.lists(), limit, setting=name)
        if ACTION_CHECKBOX_NAME in request.POST:
            _check_selected(request)


# An htmx target the 400 may be put into: a card's id (``hitl.cards``: ``card-<slug>``).
CARD_TARGET = re.compile(r"card-[A-Za-z0-9_-]{1,200}")


def refused_response(request: HttpRequest, err: Refused) -> HttpResponse:
    """The 400 page (JSON on a JSON surface); to an htmx card post, the refusal alone,
    put into the card's ``-refused`` slot (``HX-Retarget`` / ``HX-Reswap``; base.html's
    ``responseHandling`` lets htmx swap a 400), so the card keeps what was typed and says
    what was refused."""
    if json_surface(request.path):  # the LangGraph API: its clients read ``detail``
        return JsonResponse({"code": "invalid_input", "field": err.field,
                             "detail": f"{err.field}: {err.problem}"}, status=400)
    context = {"field": err.field, "problem": err.problem}
    target = request.headers.get("HX-Target", "")
    if request.headers.get("HX-Request") == "true" and CARD_TARGET.fullmatch(target):
        response = render(request, "_refused_fragment.html", context, status=400)
        response["HX-Retarget"] = f"#{target}-refused"
        response["HX-Reswap"] = "innerHTML"
        return response
    return render(request, "400_input.html", context, status=400)


class FormGuardMiddleware:
    """Refuse what Postgres or the limits cannot take before a page or admin view runs.

    Listed last: the CSRF check runs first (a post without its token stays a 403), and
    the 400 page knows who is logged in. A refused request is refused whoever asks.
    """

    # Both: under ASGI the check runs on the event loop (CPU only: no thread hop per
    # request, agentsite.loop_middleware); only a refusal's page is made in the thread
    # (its template reads the user).
    sync_capable = async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)
            # Django hops to a thread for a sync process_view in an async stack.
            self.process_view = self.aprocess_view  # type: ignore[method-assign]

    def __call__(self, request: HttpRequest) -> Any:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: Any, view_args: tuple,
                     view_kwargs: dict[str, Any]) -> HttpResponse | None:
        refused = self.refused(request, view_args, view_kwargs)
        return refused_response(request, refused) if refused else None

    async def aprocess_view(self, request: HttpRequest, view_func: Any, view_args: tuple,
                            view_kwargs: dict[str, Any]) -> HttpResponse | None:
        refused = self.refused(request, view_args, view_kwargs)
        return await sync_to_async(refused_response)(request, refused) if refused else None

    @staticmethod
    def refused(request: HttpRequest, view_args: tuple,
                view_kwargs: dict[str, Any]) -> Refused | None:
        if request.path.startswith(PARSED_ELSEWHERE):
            return None
        try:
            check_request(request, view_kwargs, view_args)
        except Refused as err:
            return err
        return None

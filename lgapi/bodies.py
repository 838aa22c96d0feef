"""Request bodies of the Platform API, as ``langgraph-sdk`` sends them (validated at the
edge: a wrong type is a 422 naming the field). Options the SDK always sends but that
change nothing here are accepted and ignored; the ones we cannot honour are refused by
``refused()`` with a 422 that says why (docs/langgraph-api.md lists each)."""

from __future__ import annotations

import uuid
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from agentsite.outbound import check_url
from lgapi.http import LgError

JsonObject = dict[str, Any]
STREAM_MODES = ("values", "updates", "messages-tuple", "messages", "custom", "debug",
                "tasks", "checkpoints")


class Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Command(Body):
    resume: Any = None
    goto: Any = None
    update: Any = None


class RunCreate(Body):
    assistant_id: str = Field(min_length=1, max_length=200)
    input: JsonObject | None = None
    command: Command | None = None
    stream_mode: str | list[str] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    metadata: JsonObject | None = None
    config: JsonObject | None = None
    context: JsonObject | None = None
    checkpoint: JsonObject | None = None
    checkpoint_id: str | None = None
    interrupt_before: str | list[str] | None = None
    interrupt_after: str | list[str] | None = None
    webhook: str | None = None
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] = "reject"
    if_not_exists: Literal["create", "reject"] = "reject"
    on_disconnect: Literal["cancel", "continue"] = "continue"
    on_completion: Literal["delete", "keep"] = "keep"
    after_seconds: float | None = None

    def modes(self) -> list[str]:
        modes = [self.stream_mode] if isinstance(self.stream_mode, str) else self.stream_mode
        unknown = [m for m in modes if m not in STREAM_MODES]
        if unknown:
            raise LgError(422, f"stream_mode {unknown[0]!r} is not supported here; "
                          f"use any of {', '.join(STREAM_MODES)}")
        return list(dict.fromkeys(modes)) or ["values"]

    def fork_checkpoint(self) -> str | None:
        """The checkpoint a fork starts from (``lgapi.fork``): ``checkpoint_id`` or
        ``checkpoint.checkpoint_id``, with ``command.resume`` the new answer."""
        found = self.checkpoint_id or (self.checkpoint or {}).get("checkpoint_id")
        resuming = self.command is not None and "resume" in self.command.model_fields_set
        return found if isinstance(found, str) and found and resuming else None

    def webhook_url(self) -> str:
        """``webhook``, checked now: an http(s) URL whose host the site may reach
        (``agentsite.outbound``; checked again at each delivery)."""
        if not self.webhook:
            return ""
        url = self.webhook
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL:
            parsed = None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host \
                or len(url) > 500:
            raise LgError(422, "webhook must be an http or https URL of at most 500 "
                          "characters")
        try:
            check_url(url)
        except httpx.HTTPError as err:  # OutboundRefused, or a name that does not resolve
            raise LgError(422, f"webhook {parsed.host!r} cannot be reached: {err}") from None
        return url

    def refused(self) -> None:
        """Options this server cannot honour: a clear 422 before anything is written."""
        why = None
        if (self.checkpoint or self.checkpoint_id) and self.fork_checkpoint() is None:
            why = ("checkpoint / checkpoint_id without command.resume (a run from an earlier "
                   "checkpoint answers the question pending there differently)")
        elif self.interrupt_before or self.interrupt_after:
            why = "interrupt_before / interrupt_after (a graph pauses with interrupt())"
        elif self.after_seconds:
            why = "after_seconds (delayed runs)"
        elif self.command is not None and (self.command.goto not in (None, [])
                                           or self.command.update not in (None, {}, [])):
            why = "command.goto / command.update (a run is resumed with command.resume)"
        if why:
            raise LgError(422, f"Not supported here: {why}.")


class ThreadCreate(Body):
    thread_id: uuid.UUID | None = None
    metadata: JsonObject | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    supersteps: list[Any] | None = None


class ThreadPatch(Body):
    metadata: JsonObject = Field(default_factory=dict)


ThreadSort = Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"]


class ThreadCount(Body):
    metadata: JsonObject | None = None
    values: JsonObject | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None


class ThreadSearch(ThreadCount):
    ids: list[uuid.UUID] | None = Field(default=None, max_length=1000)
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: ThreadSort = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"


class AssistantSearch(Body):
    metadata: JsonObject | None = None
    graph_id: str | None = None
    name: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"] = "name"
    sort_order: Literal["asc", "desc"] = "asc"


class History(Body):
    limit: int = Field(default=10, ge=1, le=1000)
    before: str | JsonObject | None = None
    metadata: JsonObject | None = None
    checkpoint: JsonObject | None = None

    def before_id(self) -> str | None:
        if isinstance(self.before, dict):
            found = self.before.get("checkpoint_id")
            return found if isinstance(found, str) else None
        return self.before

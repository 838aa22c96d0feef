"""A small OpenAI-compatible chat server for the tests (stdlib only), with scripted
replies, switchable faults and OpenAI's strict history validation.

``POST /v1/chat/completions``, streaming (SSE ``data: {...}`` chunks, ``data: [DONE]``,
chunked transfer so a cut stream is visible as one) or not; ``usage`` on a non-streaming
answer and, when the request asks ``stream_options.include_usage``, in a last chunk.
A history OpenAI would refuse is a 400 with OpenAI's error JSON: an assistant message
with ``tool_calls`` not followed by a tool message for each call id before the next
other message, a tool message answering no pending call, an unknown role.

What the next answers are:
- faults first (``fault(kind, times=...)``): ``429`` (with Retry-After), ``500``,
  ``401``, ``400``, ``hang`` (the answer waits ``seconds``, or until ``release()``, then
  is the normal answer; a client's read timeout gives up on it), ``stall`` (a stream
  that has begun sends SSE comments every half second until released, then the answer:
  a slow call no read timeout ends), ``malformed`` (a chunk that is not JSON), ``cut``
  (the connection closed mid-stream); each applies to the next ``times`` requests, then
  heals;
- then scripted replies (``script(...)``), one per request, in order;
- then the default policy, good for ``assistant`` (``agents/assistant.py``) and the
  provider adopter agent: a request mentioning an order asks ``ask_choice``, one about a
  ticket calls ``file_ticket``, ``send_email`` / ``delete_file`` are called when bound,
  otherwise (and after any tool result) a short text answer.

Every request is recorded (body, headers, what was answered, the usage sent) for the
tests' assertions. Driven in-process (``FakeProvider`` methods) or over HTTP by another
process (``/_control/...``, see ``Handler.do_POST``); run alone with
``python -m tests.providers.fake_openai --port 8999``.

The same server stands in for Anthropic (``POST /v1/messages``, SSE) and Ollama
(``POST /api/chat``, NDJSON) with text replies, for the construct-and-stream tests.
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "gpt-4o-mini"
ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
FAULTS = {"429", "500", "401", "400", "hang", "stall", "malformed", "cut"}
HISTORY_ERROR = ("An assistant message with 'tool_calls' must be followed by tool messages "
                 "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                 "response messages: {ids}")
ORPHAN_TOOL_ERROR = ("Invalid parameter: messages with role 'tool' must be a response to a "
                     "preceeding message with 'tool_calls'.")


class HistoryError(Exception):
    def __init__(self, message: str, param: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message, self.param, self.code = message, param, code


def validate_history(messages: Any) -> None:
    """Refuse what OpenAI refuses; raise HistoryError naming the message."""
    if not isinstance(messages, list) or not messages:
        raise HistoryError("[] is too short - 'messages'", "messages")
    pending: dict[str, int] = {}  # unanswered call id -> index of its assistant message
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            raise HistoryError(f"Invalid value: '{role}'. Supported values are: 'system', "
                               "'assistant', 'user', 'function', 'tool', and 'developer'.",
                               f"messages[{i}].role", "invalid_value")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise HistoryError(ORPHAN_TOOL_ERROR, f"messages.[{i}].role")
            del pending[call_id]
            continue
        if pending:
            raise HistoryError(HISTORY_ERROR.format(ids=", ".join(pending)),
                               f"messages.[{min(pending.values())}].role")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                pending[call["id"]] = i
    if pending:
        raise HistoryError(HISTORY_ERROR.format(ids=", ".join(pending)),
                           f"messages.[{min(pending.values())}].role")


@dataclass
class Reply:
    """One answer: text and/or tool calls (``[{"name", "args", "id"?}]``)."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int | None = None  # default: from the request's size
    completion_tokens: int | None = None  # default: from the reply's size


@dataclass
class Fault:
    kind: str
    times: int = 1
    retry_after: float | None = None  # 429: the Retry-After header, seconds
    seconds: float | None = None  # hang, stall: how long (None: until released)
    after_chunks: int = 2  # malformed / cut: good chunks sent first


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    at: float
    answer: str = ""  # "ok", "400 history", "429", "hang", "cut", ...
    status: int = 200
    usage: dict[str, int] | None = None  # the usage this answer reported (if it did)
    reply: dict[str, Any] | None = None  # the reply's text and tool calls

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages") or []

    def text(self) -> str:
        """Every message's content, joined: for matching a request to a test's run."""
        return "\n".join(str(m.get("content") or "") for m in self.messages)


def default_reply(body: dict[str, Any]) -> Reply:
    """What a helpful model would do with this conversation (see the module doc)."""
    tools = {t.get("function", {}).get("name") for t in body.get("tools") or []}
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        results = []
        for m in reversed(messages):
            if m.get("role") != "tool":
                break
            results.insert(0, str(m.get("content")))
        return Reply(text="Done: " + " | ".join(results))
    request = str(last.get("content") or "")
    lower = request.lower()
    if "order" in lower and "ask_choice" in tools:
        return Reply(tool_calls=[{"name": "ask_choice", "args": {
            "question": "Which one do you mean?",
            "options": ["Order status", "Returns and refunds"]}}])
    if "ticket" in lower and "file_ticket" in tools:
        return Reply(tool_calls=[{"name": "file_ticket", "args": {
            "title": request[:120], "priority": "normal"}}])
    if {"send_email", "delete_file"} <= tools:
        return Reply(tool_calls=[
            {"name": "send_email", "args": {"to": "alice@example.com", "body": "hi"}},
            {"name": "delete_file", "args": {"path": "/tmp/report"}}])
    return Reply(text=f"You asked: {request}. Here is my answer.")


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class FakeProvider:
    """The server and its controls. ``start()`` serves on a free port of 127.0.0.1."""

    def __init__(self, port: int = 0) -> None:
        self.lock = threading.Lock()
        self.faults: list[Fault] = []
        self.replies: list[Reply] = []
        self.recorded: list[Recorded] = []
        self.released = threading.Event()
        self.hanging = 0  # requests waiting in a hang now
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.server.provider = self  # type: ignore[attr-defined]
        self.thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``OPENAI_BASE_URL``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """For Anthropic (``/v1/messages`` below it) and Ollama (``/api/chat``)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeProvider:
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-openai",
                                       daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()

    # --- controls -------------------------------------------------------------------

    def reset(self) -> None:
        """No faults, no script, nothing recorded, hangs released (then hang again)."""
        with self.lock:
            self.faults.clear()
            self.replies.clear()
            self.recorded.clear()
        self.release()
        self.released = threading.Event()

    def script(self, *replies: Reply | dict[str, Any]) -> None:
        """Queue the next answers (after any fault), one per request."""
        with self.lock:
            self.replies += [r if isinstance(r, Reply) else Reply(**r) for r in replies]

    def fault(self, kind: str, times: int = 1, **options: Any) -> None:
        """The next ``times`` requests fail as ``kind`` (queued after earlier faults)."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; one of {sorted(FAULTS)}")
        with self.lock:
            self.faults.append(Fault(kind, times, **options))

    def release(self) -> None:
        """Let every hung request answer now."""
        self.released.set()

    def requests(self, path: str = "/v1/chat/completions",
                 containing: str | None = None) -> list[Recorded]:
        """The recorded requests to ``path``, oldest first; ``containing``: only those
        whose messages contain that text."""
        with self.lock:
            got = [r for r in self.recorded if r.path == path]
        return [r for r in got if containing is None or containing in r.text()]

    def wait_requests(self, count: int, timeout: float = 30, **filters: Any) -> list[Recorded]:
        deadline = time.monotonic() + timeout
        while len(got := self.requests(**filters)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(got)} requests, not {count}: "
                                     f"{[r.answer for r in got]}")
            time.sleep(0.02)
        return got

    def wait_hanging(self, count: int = 1, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.hanging < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.hanging} requests hanging, not {count}")
            time.sleep(0.02)

    # --- what to answer -------------------------------------------------------------

    def next_fault(self) -> Fault | None:
        with self.lock:
            while self.faults and self.faults[0].times <= 0:
                self.faults.pop(0)
            if not self.faults:
                return None
            fault = self.faults[0]
            fault.times -= 1
            return fault

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            if self.replies:
                return self.replies.pop(0)
        return default_reply(body)

    def record(self, entry: Recorded) -> None:
        with self.lock:
            self.recorded.append(entry)

    def control(self, path: str, body: dict[str, Any]) -> Any:
        """The HTTP control API (``/_control/<name>``) for another process."""
        name = path.removeprefix("/_control/")
        if name == "script":
            self.script(*body.get("replies", []))
        elif name == "fault":
            self.fault(**body)
        elif name == "release":
            self.release()
        elif name == "reset":
            self.reset()
        elif name == "requests":
            return [vars(r) for r in self.requests(body.get("path", "/v1/chat/completions"))]
        else:
            raise KeyError(name)
        return {"ok": True}


def error_body(message: str, type_: str, code: str | None = None,
               param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


FAULT_ERRORS = {
    "429": (429, error_body("Rate limit reached for gpt-4o-mini in organization org-test on "
                            "requests per min (RPM): Limit 3, Used 3, Requested 1.",
                            "requests", "rate_limit_exceeded")),
    "500": (500, error_body("The server had an error while processing your request. Sorry "
                            "about that!", "server_error")),
    "401": (401, error_body("Incorrect API key provided: test. You can find your API key at "
                            "https://platform.openai.com/account/api-keys.",
                            "invalid_request_error", "invalid_api_key")),
    "400": (400, error_body("Invalid 'messages[0].content': string too long.",
                            "invalid_request_error", "string_above_max_length",
                            "messages[0].content")),
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked streams whose cut shows

    @property
    def provider(self) -> FakeProvider:
        return self.server.provider  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # --- plumbing --------------------------------------------------------------------

    def read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw or b"{}")

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def wait_released(self, fault: Fault, stall: bool) -> None:
        """Until released or ``fault.seconds`` passed; a stall keeps the stream alive."""
        deadline = None if fault.seconds is None else time.monotonic() + fault.seconds
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            step = 0.5 if stall else left
            if step is not None and left is not None:
                step = min(step, left)
            if self.provider.released.wait(step) or (left is not None and left <= 0):
                return
            if stall:
                if self.client_gone():
                    return  # the client closed the connection (seen within a tick)
                try:
                    self.chunk(b": still thinking\n\n")
                except OSError:
                    return  # the client left; client_gone() says so

    def client_gone(self) -> bool:
        """The client closed its end (a read timeout gave up on us)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def cut(self) -> None:
        """Close the connection mid-body: the client sees an incomplete chunked read."""
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(2)

    # --- routes ------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self.path.startswith("/_control/requests"):
            self.send_json(200, self.provider.control("/_control/requests", {}))
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self.send_json(404, error_body(f"Unknown path {self.path}", "invalid_request_error"))

    def do_POST(self) -> None:
        try:
            body = self.read_json()
        except ValueError:
            self.send_json(400, error_body("We could not parse the JSON body of your request.",
                                           "invalid_request_error"))
            return
        if self.path.startswith("/_control/"):
            try:
                self.send_json(200, self.provider.control(self.path, body))
            except (KeyError, TypeError, ValueError) as exc:
                self.send_json(400, {"error": str(exc)})
            return
        entry = Recorded(path=self.path, body=body, at=time.time(),
                         headers={k.lower(): v for k, v in self.headers.items()})
        self.provider.record(entry)
        try:
            if self.path == "/v1/chat/completions":
                self.chat_completions(body, entry)
            elif self.path == "/v1/messages":
                self.anthropic_messages(body, entry)
            elif self.path == "/api/chat":
                self.ollama_chat(body, entry)
            else:
                entry.status, entry.answer = 404, "404"
                self.send_json(404, error_body(f"Unknown path {self.path}",
                                               "invalid_request_error"))
        except (BrokenPipeError, ConnectionResetError):
            entry.answer += " (client gone)"  # a client that timed out and left

    # --- OpenAI ------------------------------------------------------------------------

    def chat_completions(self, body: dict[str, Any], entry: Recorded) -> None:
        fault = self.provider.next_fault()
        if fault is not None and fault.kind in FAULT_ERRORS:
            status, error = FAULT_ERRORS[fault.kind]
            headers = {}
            if fault.kind == "429":
                headers["Retry-After"] = str(fault.retry_after if fault.retry_after is not None
                                             else 1)
            entry.status, entry.answer = status, fault.kind
            self.send_json(status, error, headers)
            return
        streaming = bool(body.get("stream"))
        if fault is not None and fault.kind in ("hang", "stall"):
            entry.answer = fault.kind
            if fault.kind == "stall" and streaming:
                self.start_stream("text/event-stream; charset=utf-8")
            with self.provider.lock:
                self.provider.hanging += 1
            try:
                self.wait_released(fault, stall=fault.kind == "stall" and streaming)
            finally:
                with self.provider.lock:
                    self.provider.hanging -= 1
            if self.client_gone():
                entry.answer += ", client gone"
                self.close_connection = True
                return
            entry.answer += ", then "
        try:
            validate_history(body.get("messages"))
        except HistoryError as err:
            entry.status, entry.answer = 400, entry.answer + "400 history"
            entry.reply = {"error": err.message}
            self.send_json(400, error_body(err.message, "invalid_request_error", err.code,
                                           err.param))
            return
        reply = self.provider.next_reply(body)
        calls = [{"id": c.get("id") or f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                  "function": {"name": c["name"], "arguments": json.dumps(c.get("args", {}))}}
                 for c in reply.tool_calls]
        usage = {"prompt_tokens": reply.prompt_tokens or _tokens(json.dumps(body["messages"])),
                 "completion_tokens": reply.completion_tokens
                 or _tokens(reply.text + json.dumps(calls))}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        entry.reply = {"text": reply.text, "tool_calls": calls}
        finish = "tool_calls" if calls else "stop"
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        base = {"id": completion_id, "created": int(time.time()), "model": MODEL,
                "system_fingerprint": "fp_test"}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None,
                                       "refusal": None}
            if calls:
                message["tool_calls"] = calls
            entry.usage, entry.answer = usage, entry.answer + "ok"
            self.send_json(200, {**base, "object": "chat.completion", "usage": usage,
                                 "choices": [{"index": 0, "message": message,
                                              "logprobs": None, "finish_reason": finish}]})
            return
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        started = fault is not None and fault.kind == "stall"

        def event(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            data = {**base, "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                 "finish_reason": finish_reason}]}
            if include_usage:
                data["usage"] = None
            return b"data: " + json.dumps(data).encode() + b"\n\n"

        events = [event({"role": "assistant", "content": "", "refusal": None})]
        words = reply.text.split(" ")
        events += [event({"content": w if i == 0 else " " + w})
                   for i, w in enumerate(words) if reply.text]
        for index, call in enumerate(calls):
            args = call["function"]["arguments"]
            events.append(event({"tool_calls": [{"index": index, "id": call["id"],
                                                 "type": "function", "function": {
                                                     "name": call["function"]["name"],
                                                     "arguments": ""}}]}))
            half = len(args) // 2
            for part in (args[:half], args[half:]):
                events.append(event({"tool_calls": [{"index": index,
                                                     "function": {"arguments": part}}]}))
        events.append(event({}, finish))
        if include_usage:
            events.append(b"data: " + json.dumps({**base, "object": "chat.completion.chunk",
                                                  "choices": [], "usage": usage}).encode()
                          + b"\n\n")
        events.append(b"data: [DONE]\n\n")
        if not started:
            self.start_stream("text/event-stream; charset=utf-8")
        if fault is not None and fault.kind in ("malformed", "cut"):
            entry.answer += fault.kind
            for data in events[:fault.after_chunks]:
                self.chunk(data)
            if fault.kind == "malformed":
                self.chunk(b'data: {"id": "chatcmpl-broken", "choices": [{"delta": \n\n')
                try:
                    self.chunk(b"data: [DONE]\n\n")
                    self.end_stream()
                except (BrokenPipeError, ConnectionResetError):
                    # The client may give up at the broken chunk and close before the
                    # rest is written: the fault was delivered all the same.
                    self.close_connection = True
            else:
                self.cut()
            return
        # Recorded before the answer goes out: a test reading it once its client has the
        # answer sees it.
        entry.answer += "ok"
        entry.usage = usage if include_usage else None
        for data in events:
            self.chunk(data)
        self.end_stream()

    # --- Anthropic Messages (text only) --------------------------------------------------

    def anthropic_messages(self, body: dict[str, Any], entry: Recorded) -> None:
        reply = self.provider.next_reply({"messages": body.get("messages") or []})
        words = reply.text.split(" ")
        usage_in = _tokens(json.dumps(body.get("messages")))
        usage_out = len(words)
        entry.usage = {"input_tokens": usage_in, "output_tokens": usage_out}
        entry.reply, entry.answer = {"text": reply.text}, "ok"
        message = {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message",
                   "role": "assistant", "model": body.get("model"), "content": [],
                   "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": usage_in, "output_tokens": 1}}
        if not body.get("stream"):
            self.send_json(200, {**message, "content": [{"type": "text", "text": reply.text}],
                                 "stop_reason": "end_turn",
                                 "usage": {"input_tokens": usage_in,
                                           "output_tokens": usage_out}})
            return

        def event(name: str, data: dict[str, Any]) -> bytes:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

        self.start_stream("text/event-stream; charset=utf-8")
        self.chunk(event("message_start", {"type": "message_start", "message": message}))
        self.chunk(event("content_block_start", {
            "type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}))
        for i, word in enumerate(words):
            self.chunk(event("content_block_delta", {
                "type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": word if i == 0 else " " + word}}))
        self.chunk(event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        self.chunk(event("message_delta", {
            "type": "message_delta", "delta": {"stop_reason": "end_turn",
                                               "stop_sequence": None},
            # Cumulative, as the API sends it now (LangChain reads input_tokens here).
            "usage": {"input_tokens": usage_in, "output_tokens": usage_out}}))
        self.chunk(event("message_stop", {"type": "message_stop"}))
        self.end_stream()

    # --- Ollama /api/chat (text only) ------------------------------------------------------

    def ollama_chat(self, body: dict[str, Any], entry: Recorded) -> None:
        reply = self.provider.next_reply({"messages": body.get("messages") or []})
        words = reply.text.split(" ")
        prompt = _tokens(json.dumps(body.get("messages")))
        entry.usage = {"prompt_eval_count": prompt, "eval_count": len(words)}
        entry.reply, entry.answer = {"text": reply.text}, "ok"
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        done = {"model": body.get("model"), "created_at": now,
                "message": {"role": "assistant", "content": ""}, "done": True,
                "done_reason": "stop", "total_duration": 1000, "load_duration": 10,
                "prompt_eval_count": prompt, "prompt_eval_duration": 100,
                "eval_count": len(words), "eval_duration": 500}
        if body.get("stream") is False:
            done["message"]["content"] = reply.text
            self.send_json(200, done)
            return
        self.start_stream("application/x-ndjson")
        for i, word in enumerate(words):
            self.chunk(json.dumps({"model": body.get("model"), "created_at": now,
                                   "message": {"role": "assistant",
                                               "content": word if i == 0 else " " + word},
                                   "done": False}).encode() + b"\n")
        self.chunk(json.dumps(done).encode() + b"\n")
        self.end_stream()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8999)
    port = parser.parse_args().port
    provider = FakeProvider(port)
    print(f"OPENAI_BASE_URL={provider.base_url}", flush=True)
    try:
        provider.server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

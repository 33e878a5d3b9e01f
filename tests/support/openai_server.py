"""A small OpenAI-compatible chat server for tests that drive the real ChatOpenAI.

    from tests.support.fake_model import Reply, tool_call
    from tests.support.openai_server import OpenAICompatibleServer

    with OpenAICompatibleServer() as srv:
        srv.script([
            Reply(tool_calls=[tool_call("set_objective", "Recording the goal.", text="Ship it")]),
            Reply(text="I recorded the objective."),
        ])
        ... ChatOpenAI(base_url=srv.base_url, api_key="x", model="scripted") ...
        srv.requests      # every POST body (parsed JSON), in order
        srv.system_prompt(0)  # the system message text of request 0

`POST /v1/chat/completions` answers in JSON, or as server-sent events when the
request says `"stream": true`: text one token per event, each tool call's
arguments split over several events (`args_chunk_chars`), then the
finish_reason, the usage event when the request asks for it
(`stream_options: {"include_usage": true}`, as OpenAI does), and
`data: [DONE]`. Usage counts the request's and the reply's characters / 4,
like a tokenizer would roughly (a Reply's `usage` sets them exactly; a
`Misbehave(no_usage=True)` reply reports none); `srv.usages` lists what was
reported, per request. `GET /v1/models`
lists `models`. A script step is a `Reply` (from tests.support.fake_model), an
`HTTPFailure` (answer with an error status), a `Misbehave` (a reply sent
wrong on purpose: hanging, arguments that are not JSON, a stream cut or
ending without a finish reason), or a callable taking the request body and
returning one of them. Stdlib only; the server runs in a daemon thread on
a port the OS picks, and `stop()` (or leaving the `with`) shuts it down;
with `tls=(certificate, key)` it answers over HTTPS, as a provider does.
"""

from __future__ import annotations

import itertools
import json
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.fake_model import Reply

__all__ = ["HTTPFailure", "Misbehave", "OpenAICompatibleServer", "Reply"]


@dataclass
class HTTPFailure:
    """Answer one request with an error status (e.g. 429, 500) in OpenAI's error shape."""

    status: int = 500
    message: str = "scripted failure"
    retry_after: float | None = None


@dataclass
class Misbehave:
    """A reply sent wrong on purpose, the way real servers sometimes do.

    hang_seconds      wait this long before answering at all (the client's
                      timeout should fire first)
    raw_arguments     each tool call's arguments sent as this exact text
                      (e.g. JSON cut off half-way) instead of `reply`'s args
    cut_after_tokens  stream: close the connection after this many text
                      tokens, mid-answer, with no finish reason and no [DONE]
    no_finish_reason  stream: end with [DONE] but never send a finish reason
    no_usage          report no token usage at all (some servers never do)
    pause_after_tokens, pause_seconds
                      stream: after this many pieces (the text's tokens, then
                      the tool calls' argument pieces), send nothing for
                      this long, once (the server's `pauses` says when)
    """

    reply: Reply = field(default_factory=Reply)
    hang_seconds: float = 0.0
    raw_arguments: list[str] | None = None
    cut_after_tokens: int | None = None
    no_finish_reason: bool = False
    no_usage: bool = False
    pause_after_tokens: int | None = None
    pause_seconds: float = 0.0


Step = Reply | HTTPFailure | Misbehave | Callable[[dict], "Reply | HTTPFailure | Misbehave"]


def history_problem(messages: list) -> str | None:
    """What OpenAI's API would refuse in a request's messages (HTTP 400), or
    None: every assistant tool call answered by a tool message right after
    it, and no tool message without its call."""
    waiting: set = set()
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                return "messages with role 'tool' must be a response to a preceding message with 'tool_calls'."
            waiting.discard(message.get("tool_call_id"))
            continue
        if waiting:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(sorted(waiting))}"
            )
        if role == "assistant":
            waiting = {call.get("id") for call in message.get("tool_calls") or []}
    return None


class OpenAICompatibleServer:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        models: list[str] | None = None,
        args_chunk_chars: int = 12,
        strict_history: bool = True,
        tls: tuple[Path, Path] | None = None,
    ):
        self.host = host
        # (certificate, key): answer over HTTPS, as a provider does.
        self.tls = tls
        # Like OpenAI: a history with a tool call left unanswered gets HTTP 400.
        self.strict_history = strict_history
        self.models = models or ["scripted"]
        self.args_chunk_chars = max(1, args_chunk_chars)
        self.default_reply: Step | None = None
        self._script: list[Step] = []
        self._requests: list[dict] = []
        self._headers: list[dict] = []
        self._usages: list[dict | None] = []
        # When each Misbehave(pause_after_tokens=...) pause began (time.monotonic()).
        self.pauses: list[float] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------

    def start(self) -> OpenAICompatibleServer:
        if self._httpd is not None:
            return self
        handler = type("_Handler", (_Handler,), {"app": self})
        self._httpd = ThreadingHTTPServer((self.host, 0), handler)
        self._httpd.daemon_threads = True
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """What OPENAI_BASE_URL / ChatOpenAI(base_url=...) should be."""
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}/v1"

    # -- script and record -------------------------------------------------

    def script(self, steps: list[Step]) -> None:
        """Replace the remaining script; each request consumes the next step."""
        with self._lock:
            self._script = list(steps)

    def add(self, *steps: Step) -> None:
        with self._lock:
            self._script.extend(steps)

    @property
    def requests(self) -> list[dict]:
        """A copy of every chat-completion request body received so far."""
        with self._lock:
            return list(self._requests)

    @property
    def usages(self) -> list[dict]:
        """The usage reported for each answered request (prompt_tokens,
        completion_tokens, total_tokens), in order; None where none was sent."""
        with self._lock:
            return list(self._usages)

    def _reported(self, usage: dict | None) -> None:
        with self._lock:
            self._usages.append(usage)

    @property
    def request_headers(self) -> list[dict]:
        """The headers of every chat-completion request (lower-case names), in order."""
        with self._lock:
            return list(self._headers)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def system_prompt(self, index: int = -1) -> str:
        """The system message text of one recorded request ('' if it has none)."""
        messages = self.requests[index].get("messages") or []
        if messages and messages[0].get("role") in ("system", "developer"):
            content = messages[0].get("content")
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return content or ""
        return ""

    def _next(self, body: dict, headers: dict | None = None) -> Reply | HTTPFailure:
        with self._lock:
            self._requests.append(body)
            self._headers.append(headers or {})
            if self._script:
                step = self._script.pop(0)
            elif self.default_reply is not None:
                step = self.default_reply
            else:
                step = HTTPFailure(500, "the test server's script is exhausted")
        if callable(step) and not isinstance(step, (Reply, HTTPFailure, Misbehave)):
            step = step(body)
        return step

    def _completion_id(self) -> str:
        return f"chatcmpl-test-{next(self._ids)}"


class _Handler(BaseHTTPRequestHandler):
    app: OpenAICompatibleServer
    server_version = "HaicoTestOpenAI/1.0"

    def log_message(self, format, *args):  # keep test output quiet
        pass

    # -- routing ----------------------------------------------------------

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self._json(
                200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "test"} for m in self.app.models]}
            )
        else:
            self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self):
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "invalid JSON", "type": "invalid_request_error"}})
            return
        problem = history_problem(body.get("messages") or []) if self.app.strict_history else None
        if problem is not None:
            with self.app._lock:
                self.app._requests.append(body)
            self._json(400, {"error": {"message": problem, "type": "invalid_request_error", "param": "messages"}})
            return
        step = self.app._next(body, {name.lower(): value for name, value in self.headers.items()})
        misbehave = step if isinstance(step, Misbehave) else Misbehave(reply=step) if isinstance(step, Reply) else None
        if misbehave is not None:
            if misbehave.hang_seconds:
                time.sleep(misbehave.hang_seconds)
            step = misbehave.reply
        if isinstance(step, HTTPFailure):
            headers = {"Retry-After": str(step.retry_after)} if step.retry_after is not None else {}
            self._json(step.status, {"error": {"message": step.message, "type": "server_error"}}, headers)
            return
        model = body.get("model") or self.app.models[0]
        usage = None if misbehave is not None and misbehave.no_usage else self._usage(step, body)
        try:
            if body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                cut = misbehave is not None and misbehave.cut_after_tokens is not None
                self.app._reported(usage if include_usage and not cut else None)
                self._stream(step, model, usage if include_usage else None, misbehave)
            else:
                self.app._reported(usage)
                self._json(200, self._completion(step, model, usage, misbehave))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout, a cancelled turn)

    # -- bodies -----------------------------------------------------------

    @staticmethod
    def _tool_calls(reply: Reply, call_no: str, misbehave: Misbehave | None = None) -> list[dict]:
        raw = misbehave.raw_arguments if misbehave is not None else None
        return [
            {
                "id": call.get("id") or f"call_{call_no}_{i}",
                "type": "function",
                "function": {"name": call["name"], "arguments": raw[i] if raw is not None else json.dumps(call["args"])},
            }
            for i, call in enumerate(reply.tool_calls)
        ]

    @staticmethod
    def _usage(reply: Reply, body: dict) -> dict:
        if reply.usage is not None:
            prompt, completion = reply.usage["prompt_tokens"], reply.usage["completion_tokens"]
        else:
            sent = json.dumps(body.get("messages") or []) + json.dumps(body.get("tools") or [])
            written = reply.text + "".join(json.dumps(call["args"]) + call["name"] for call in reply.tool_calls)
            prompt, completion = max(1, len(sent) // 4), max(1, len(written) // 4)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _completion(self, reply: Reply, model: str, usage: dict | None, misbehave: Misbehave | None = None) -> dict:
        completion_id = self.app._completion_id()
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = self._tool_calls(reply, completion_id, misbehave)
        return {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": reply.resolved_finish_reason}],
            **({"usage": usage} if usage is not None else {}),
        }

    def _stream(self, reply: Reply, model: str, usage: dict | None, misbehave: Misbehave | None = None) -> None:
        completion_id = self.app._completion_id()
        created = int(time.time())

        def chunk(delta: dict | None, finish_reason=None, **extra) -> dict:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": choices,
                **extra,
            }

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        cut_after = misbehave.cut_after_tokens if misbehave is not None else None
        pause_after = misbehave.pause_after_tokens if misbehave is not None else None
        try:
            self._event(chunk({"role": "assistant", "content": ""}))
            for number, token in enumerate(reply.text_tokens()):
                if cut_after is not None and number >= cut_after:
                    self.close_connection = True
                    return  # the connection drops mid-answer
                if number == pause_after:
                    self._pause(misbehave)
                if reply.token_delay:
                    time.sleep(reply.token_delay)
                self._event(chunk({"content": token}))
            pieces = len(reply.text_tokens())
            for i, call in enumerate(self._tool_calls(reply, completion_id, misbehave)):
                arguments = call["function"]["arguments"]
                head = {
                    "index": i,
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["function"]["name"], "arguments": ""},
                }
                self._event(chunk({"tool_calls": [head]}))
                size = self.app.args_chunk_chars
                for start in range(0, len(arguments), size):
                    if pause_after is not None and pieces == pause_after:
                        self._pause(misbehave)
                    pieces += 1
                    piece = {"index": i, "function": {"arguments": arguments[start : start + size]}}
                    self._event(chunk({"tool_calls": [piece]}))
            if misbehave is None or not misbehave.no_finish_reason:
                self._event(chunk({}, reply.resolved_finish_reason))
            if usage is not None:
                self._event(chunk(None, usage=usage))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (a cancelled turn); nothing to do

    def _pause(self, misbehave: Misbehave) -> None:
        self.app.pauses.append(time.monotonic())
        time.sleep(misbehave.pause_seconds)

    def _event(self, payload: dict) -> None:
        self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        self.wfile.flush()

    def _json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

"""A scripted, OpenAI-compatible streaming chat model on plain asyncio, for benches.

`POST /v1/chat/completions` answers like a real provider, with a fixed script
that makes one agent turn = one tool call + one streamed answer:

- the last request message is not a tool result -> one `set_objective` tool
  call (unique call id per request), finish_reason "tool_calls";
- the last request message is a tool result -> `--tokens` content tokens at
  `--rate` tokens/s, finish_reason "stop".

Every reply waits `--latency` seconds before its first chunk. Each answer
token is the text " tk<µs>" where <µs> is the wall clock (`time.time()` in
microseconds) at the moment the token is written to the socket, strictly
increasing within a reply. The token survives HTML escaping and markdown
rendering, so a client can find it with `common.TOKEN_RE` in whatever frame
carries it and compute model -> client delay = receipt - emit.

Both streaming (SSE, `data: {chunk}` ... `data: [DONE]`, chunked transfer
encoding so keep-alive works) and plain JSON completions are served;
`stream_options.include_usage` adds the usage chunk before `[DONE]`.
`GET /stats` returns request counters as JSON (benches diff them around a
round to see e.g. SDK retries).

Why asyncio rather than a thread per request: 200 concurrent streams at
30 tokens/s are 6 000 timed writes a second; one event loop does that with
little CPU and without thread scheduling jitter in the emit times.

Run: .venv/bin/python -m bench.model_server [--port 0] [--latency 0.3] [--tokens 60] [--rate 30]
It prints "LISTENING <port>" on stdout once it accepts connections, and
stops on SIGTERM / SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
import uuid

OBJECTIVE_ARGS = {"text": "Plan a short essay", "action_and_reasoning": "Recording the goal."}


class Script:
    def __init__(self, latency: float, tokens: int, rate: float, model: str = "bench-model"):
        self.latency = latency
        self.tokens = tokens
        self.rate = rate
        self.model = model
        self.stats = {
            "requests": 0,
            "streamed": 0,
            "tool_call_replies": 0,
            "answer_replies": 0,
            "bad_requests": 0,
            "client_disconnects": 0,
            "active": 0,
            "max_active": 0,
        }


def _chunk(rid: str, created: int, model: str, delta: dict, finish_reason=None) -> dict:
    return {
        "id": rid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


class _Tokens:
    """Token texts carrying their emit time, unique and increasing within one reply."""

    def __init__(self):
        self.last = 0

    def next(self) -> str:
        stamp = int(time.time() * 1_000_000)
        if stamp <= self.last:
            stamp = self.last + 1
        self.last = stamp
        return f" tk{stamp}"


async def _read_request(reader: asyncio.StreamReader):
    """(method, path, headers, body) of the next request, or None at EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise ValueError(f"bad request line {lines[0]!r}")
    method, path, version = parts
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    else:
        length = int(headers.get("content-length") or 0)
        body = await reader.readexactly(length) if length else b""
    keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    return method, path, headers, body, keep_alive


def _head(status: str, content_type: str, keep_alive: bool, length: int | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}", "Cache-Control: no-cache"]
    lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _send_json(writer, status: str, payload, keep_alive: bool) -> None:
    body = json.dumps(payload).encode()
    writer.write(_head(status, "application/json", keep_alive, len(body)) + body)
    await writer.drain()


class Reply:
    """One chat completion, streamed or not."""

    def __init__(self, script: Script, request: dict, writer, keep_alive: bool):
        self.script = script
        self.request = request
        self.writer = writer
        self.keep_alive = keep_alive
        self.rid = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = request.get("model") or script.model
        messages = request.get("messages") or []
        self.answer = bool(messages) and messages[-1].get("role") == "tool"
        self.prompt_tokens = max(1, len(json.dumps(messages)) // 4)
        self.loop = asyncio.get_running_loop()
        self.t_start = self.loop.time()

    async def _sleep_until(self, offset: float) -> None:
        # Absolute schedule from the request's arrival, so per-token overheads
        # do not accumulate into a slower rate than configured.
        delay = self.t_start + offset - self.loop.time()
        if delay > 0:
            await asyncio.sleep(delay)

    def _usage(self, completion_tokens: int) -> dict:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": self.prompt_tokens + completion_tokens,
        }

    def _tool_call(self) -> dict:
        return {
            "index": 0,
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": "set_objective", "arguments": json.dumps(OBJECTIVE_ARGS)},
        }

    async def run(self) -> None:
        if self.answer:
            self.script.stats["answer_replies"] += 1
        else:
            self.script.stats["tool_call_replies"] += 1
        if self.request.get("stream"):
            self.script.stats["streamed"] += 1
            await self._stream()
        else:
            await self._plain()

    async def _plain(self) -> None:
        s = self.script
        if self.answer:
            await self._sleep_until(s.latency + s.tokens / s.rate)
            tokens = _Tokens()
            message = {"role": "assistant", "content": "".join(tokens.next() for _ in range(s.tokens))}
            finish, completion = "stop", s.tokens
        else:
            await self._sleep_until(s.latency)
            call = self._tool_call()
            del call["index"]
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish, completion = "tool_calls", 12
        await _send_json(
            self.writer,
            "200 OK",
            {
                "id": self.rid,
                "object": "chat.completion",
                "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": self._usage(completion),
            },
            self.keep_alive,
        )

    async def _event(self, payload) -> None:
        data = b"data: " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n"
        self.writer.write(b"%x\r\n%s\r\n" % (len(data), data))
        await self.writer.drain()

    async def _stream(self) -> None:
        s = self.script
        self.writer.write(_head("200 OK", "text/event-stream", self.keep_alive))
        await self._sleep_until(s.latency)
        if self.answer:
            await self._event(_chunk(self.rid, self.created, self.model, {"role": "assistant", "content": ""}))
            tokens = _Tokens()
            for i in range(s.tokens):
                await self._sleep_until(s.latency + i / s.rate)
                await self._event(_chunk(self.rid, self.created, self.model, {"content": tokens.next()}))
            await self._sleep_until(s.latency + s.tokens / s.rate)
            finish, completion = "stop", s.tokens
        else:
            call = self._tool_call()
            arguments = call["function"]["arguments"]
            call["function"]["arguments"] = ""
            await self._event(
                _chunk(self.rid, self.created, self.model, {"role": "assistant", "content": None, "tool_calls": [call]})
            )
            # The arguments in two pieces, as providers stream them.
            half = len(arguments) // 2
            for piece in (arguments[:half], arguments[half:]):
                await self._event(
                    _chunk(self.rid, self.created, self.model, {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                )
            finish, completion = "tool_calls", 12
        await self._event(_chunk(self.rid, self.created, self.model, {}, finish))
        if (self.request.get("stream_options") or {}).get("include_usage"):
            await self._event(
                {
                    "id": self.rid,
                    "object": "chat.completion.chunk",
                    "created": self.created,
                    "model": self.model,
                    "choices": [],
                    "usage": self._usage(completion),
                }
            )
        await self._event(b"[DONE]")
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()


async def _serve_connection(script: Script, reader, writer) -> None:
    stats = script.stats
    try:
        while True:
            try:
                request = await _read_request(reader)
            except (ValueError, asyncio.LimitOverrunError):
                stats["bad_requests"] += 1
                await _send_json(writer, "400 Bad Request", {"error": {"message": "bad request"}}, False)
                return
            if request is None:
                return
            method, path, _headers, body, keep_alive = request
            path = path.split("?", 1)[0]
            if method == "GET" and path == "/stats":
                await _send_json(writer, "200 OK", stats, keep_alive)
            elif method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                try:
                    payload = json.loads(body or b"{}")
                except ValueError:
                    stats["bad_requests"] += 1
                    await _send_json(writer, "400 Bad Request", {"error": {"message": "body is not JSON"}}, keep_alive)
                    continue
                stats["requests"] += 1
                stats["active"] += 1
                stats["max_active"] = max(stats["max_active"], stats["active"])
                try:
                    await Reply(script, payload, writer, keep_alive).run()
                finally:
                    stats["active"] -= 1
            else:
                await _send_json(writer, "404 Not Found", {"error": {"message": f"no route {method} {path}"}}, keep_alive)
            if not keep_alive:
                return
    except (ConnectionError, BrokenPipeError):
        stats["client_disconnects"] += 1
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, BrokenPipeError):
            pass


async def serve(host: str, port: int, script: Script) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # A deep backlog: at 200 concurrent turns the SDK opens ~200 connections at
    # once, and SYN-queue overflow would add 1 s retransmits to the figures.
    server = await asyncio.start_server(lambda r, w: _serve_connection(script, r, w), host, port, backlog=2048, limit=1 << 20)
    actual = server.sockets[0].getsockname()[1]
    print(f"LISTENING {actual}", flush=True)
    async with server:
        await stop.wait()
    print(json.dumps(script.stats), file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.3, help="seconds before the first chunk of every reply")
    parser.add_argument("--tokens", type=int, default=60, help="content tokens per answer")
    parser.add_argument("--rate", type=float, default=30.0, help="answer tokens per second")
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port, Script(args.latency, args.tokens, args.rate)))


if __name__ == "__main__":
    main()

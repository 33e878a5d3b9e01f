"""One round of browser-like WebSocket turns against running HAICO server(s).

Run by bench/load.py as its own process: it reads a JSON spec on stdin and
prints a JSON result on stdout.

How the clients run: one asyncio task per client on one event loop in this
process (the `websockets` asyncio client), not one OS thread per client. On a
2-core machine 200 Python threads would fight over the GIL and the scheduler
and put that noise into the receipt times; one loop that does nothing but
read sockets is the lightest client that still keeps every socket open at
once and releases every send at the same moment (one asyncio.Event). Being
its own process, it shares no loop or GIL with the orchestrator.

Per client: connect to ws://host:port/ws/threads/<uuid>/ with the Origin and
session Cookie a browser would send (all clients connect first, a few dozen
handshakes at a time, as connecting is not what is measured); then, at the
common moment, send {"message", "model"} and read frames until the turn
ends: a frame with id="chat-status" and data-state="idle". Every bench token
(common.TOKEN_RE) is looked for in every frame, whatever its layout, and the
first receipt time of each is kept (delay = receipt - emit).

A client marked "listens_only" is one more open tab of a thread another
client sends on (bench/fanout.py): it sends nothing and reads the same turn,
which for it ends only at an idle #chat-status that comes after a running
one (the turn it is waiting for, not the previous turn's end).

"settle" (seconds, default 0): after every socket is open, each one's frames
are read and thrown away for this long before the common moment. A page that
connects to a thread with turns is sent how the latest one ended (its answer
with its tokens, the idle controls); those frames are not the turn measured.

A turn counts as an error when it: shows a failed-turn marker
(class="turn-marker is-error"), gets a non-empty #chat-notice (a refusal,
which also ends that client's turn), is told to fetch the chat again (the
live layer's resync patch: a push was lost or too big), sees its socket
close, does not end within the timeout, or ends with fewer answer tokens
than the model sent.

Server CPU (utime + stime of the given pids) is read right before the sends
and right after the last turn end, so the delta covers the round only.

Spec: {"clients": [{"url", "origin", "cookie", "listens_only"?}], "message", "model",
       "timeout", "expected_tokens", "server_pids", "connect_concurrency", "settle"?}
Result: {"t0", "t_end", "turns": [{"client" (its index in the spec), "seconds",
"error", "delays"}] (one per connected client), "delays" (all turns'), "errors"
(connect failures and the turns' errors), "server_cpu", "client_cpu"}
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from bench.common import (
    cpu_seconds,
    raise_open_file_limit,
    record_tokens,
    token_delays_ms,
)

ERROR_MARKER_RE = re.compile(r'class="turn-marker is-error"[^>]*>(.*?)</p>', re.DOTALL)
NOTICE_RE = re.compile(r'<div id="chat-notice"[^>]*>(.*?)</div>', re.DOTALL)
TAG_RE = re.compile(r"<[^>]+>")
# conversations.live.RESYNC_CHAT: the page must fetch the chat it missed.
RESYNC_MARK = 'data-live-patch="chat"'


def is_turn_end(frame: str) -> bool:
    return 'id="chat-status"' in frame and 'data-state="idle"' in frame


def is_turn_start(frame: str) -> bool:
    return 'id="chat-status"' in frame and 'data-state="running"' in frame


def _text(html: str) -> str:
    return " ".join(TAG_RE.sub(" ", html).split())


async def open_socket(client: dict, gate: asyncio.Semaphore):
    async with gate:
        return await connect(
            client["url"],
            origin=client["origin"],
            additional_headers={"Cookie": client["cookie"]},
            # As a browser: no client pings; daphne would not compress anyway.
            ping_interval=None,
            compression=None,
            proxy=None,
            max_size=None,
            open_timeout=60,
        )


async def discard_frames(ws) -> None:
    """Read and forget frames until cancelled (the settle period)."""
    try:
        while True:
            await ws.recv()
    except ConnectionClosed:
        pass  # the turn that follows reports it


async def run_turn(ws, start: asyncio.Event, payload: str | None, timeout: float, expected_tokens: int) -> dict:
    """The turn `payload` starts; with payload None, the turn another tab of the thread starts."""
    await start.wait()
    loop = asyncio.get_running_loop()
    seen: dict[str, float] = {}
    error = None
    end = None
    started = payload is not None
    sent = time.time()
    deadline = loop.time() + timeout
    try:
        if payload is not None:
            await ws.send(payload)
        while True:
            frame = await asyncio.wait_for(ws.recv(), timeout=max(0.01, deadline - loop.time()))
            now = time.time()
            if isinstance(frame, bytes):
                frame = frame.decode("utf-8", "replace")
            record_tokens(frame, seen, now)
            started = started or is_turn_start(frame)
            if RESYNC_MARK in frame and error is None:
                error = "told to fetch the chat again (a push was lost or too big)"
            marker = ERROR_MARKER_RE.search(frame)
            if marker and error is None:
                error = f"failed turn: {_text(marker.group(1))}"
            notice = NOTICE_RE.search(frame)
            if notice and _text(notice.group(1)):
                error = error or f"refused: {_text(notice.group(1))}"
                end = now
                break
            if started and is_turn_end(frame):
                end = now
                break
    except TimeoutError:
        error = f"no turn end within {timeout:.0f} s"
    except ConnectionClosed as exc:
        close = exc.rcvd
        error = f"socket closed ({close.code} {close.reason})" if close else "socket closed (no close frame)"
    # A token emitted before the send is the previous turn's, come late.
    seen = {stamp: received for stamp, received in seen.items() if int(stamp) / 1_000_000 >= sent}
    if error is None and len(seen) < expected_tokens:
        error = f"answer incomplete: {len(seen)} of {expected_tokens} tokens"
    return {"sent": sent, "end": end if end is not None else time.time(), "delays": token_delays_ms(seen), "error": error}


async def main(spec: dict) -> dict:
    raise_open_file_limit()
    gate = asyncio.Semaphore(spec.get("connect_concurrency", 32))
    opened = await asyncio.gather(*(open_socket(c, gate) for c in spec["clients"]), return_exceptions=True)
    connected = [i for i, ws in enumerate(opened) if not isinstance(ws, BaseException)]
    sockets = [opened[i] for i in connected]
    errors = [f"connect failed: {type(ws).__name__}: {ws}"[:300] for ws in opened if isinstance(ws, BaseException)]
    if spec.get("settle"):
        readers = [asyncio.create_task(discard_frames(ws)) for ws in sockets]
        await asyncio.sleep(spec["settle"])
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    payload = json.dumps({"message": spec["message"], "model": spec["model"]})
    start = asyncio.Event()
    tasks = [
        asyncio.create_task(
            run_turn(
                opened[i],
                start,
                None if spec["clients"][i].get("listens_only") else payload,
                spec["timeout"],
                spec["expected_tokens"],
            )
        )
        for i in connected
    ]
    await asyncio.sleep(0.05)  # every task is waiting on the event
    pids = spec.get("server_pids") or []
    cpu_before = sum(cpu_seconds(pid) for pid in pids)
    own_cpu_before = cpu_seconds()
    t0 = time.time()
    start.set()
    turns = await asyncio.gather(*tasks)
    cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
    own_cpu = cpu_seconds() - own_cpu_before
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return {
        "t0": t0,
        "t_end": max((t["end"] for t in turns), default=t0),
        "turns": [
            {"client": i, "seconds": t["end"] - t["sent"], "error": t["error"], "delays": t["delays"]}
            for i, t in zip(connected, turns)
        ],
        "delays": [d for t in turns for d in t["delays"]],
        "errors": errors + [t["error"] for t in turns if t["error"]],
        "server_cpu": cpu,
        "client_cpu": own_cpu,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))

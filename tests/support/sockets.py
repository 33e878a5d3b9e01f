"""Reading what a test's WebSocket (Channels' WebsocketCommunicator) is sent."""

from __future__ import annotations

import asyncio


async def frames_within(socket, seconds: float) -> tuple[list[str], int | None]:
    """The text frames the page is sent within `seconds`, and its close code
    if it closed meanwhile (None if it stayed open). receive_nothing comes
    first: a receive that times out would cancel the application."""
    frames: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        if await socket.receive_nothing(timeout=0.1):
            continue
        output = await socket.receive_output(timeout=1)
        if output["type"] == "websocket.close":
            return frames, output.get("code")
        if output.get("text"):
            frames.append(output["text"])
    return frames, None

"""Helpers for the WebSocket turn tests."""

import asyncio
import re
import time

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from langchain.agents import create_agent

from agent.builder import build_agent
from agent.context import AgentContext
from agent.tools.registry import build_tools
from conversations.turns import registry
from tests.support.fake_model import ScriptedChatModel


class _ScriptedAgents:
    """Stands in for the process's AgentProvider: the real agent (or one with
    extra tools) around a scripted model; records the model each turn asked
    for (the provider's name for it; None when no model was configured)."""

    def __init__(self, model, extra_tools, model_names, choices):
        self.model = model
        self.extra_tools = list(extra_tools)
        self.model_names = model_names
        self.choices = choices

    def warm(self, *, checkpointer):
        pass  # a scripted model has nothing to load

    def graph(self, *, model, checkpointer):
        self.model_names.append(getattr(model, "model", model))
        self.choices.append(model)
        if self.extra_tools:
            return create_agent(
                model=self.model,
                tools=[*build_tools(), *self.extra_tools],
                checkpointer=checkpointer,
                context_schema=AgentContext,
            )
        return build_agent(model=self.model, checkpointer=checkpointer)


class Script:
    """Installs a scripted model behind the real agent builder and records
    which model name each turn asked for."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.model = None
        self.model_names: list = []
        self.choices: list = []  # the agent.catalogue.ModelChoice of each turn

    def __call__(self, *replies, default=None, extra_tools=()):
        self.model = ScriptedChatModel(script=list(replies), default_reply=default)
        self.monkeypatch.setattr(registry, "agents", _ScriptedAgents(self.model, extra_tools, self.model_names, self.choices))
        return self.model


def _session_cookie(user) -> bytes:
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}".encode()


# The top bar's presence as a push carries it (conversations/fragments/presence.html).
PRESENCE_PUSH = re.compile(r'\n?<div class="presence" id="presence"[^>]*>.*?</div>\n?', re.S)


def _without_presence(output: dict) -> dict | None:
    """`output` with any presence push taken out; None if that was all it carried."""
    text = output.get("text") if output.get("type") == "websocket.send" else None
    if not text or 'id="presence"' not in text:
        return output
    rest = PRESENCE_PUSH.sub("", text)
    return {**output, "text": rest} if rest else None


class QuietPresenceSocket(WebsocketCommunicator):
    """A thread socket as the tests of everything but presence read it.
    Every page that opens or closes pushes the thread's presence to all its
    pages (conversations.presence); those tests count and compare frames,
    so this socket leaves presence out. Presence has its own tests, on
    plain sockets (test_presence_sockets)."""

    async def receive_output(self, timeout=1):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            output = _without_presence(await super().receive_output(max(0.01, deadline - loop.time())))
            if output is not None:
                return output

    async def receive_nothing(self, timeout=0.1, interval=0.01):
        deadline = time.monotonic() + timeout
        while True:
            if await super().receive_nothing(max(0.0, deadline - time.monotonic()), interval):
                return True
            waiting = self.output_queue._queue  # asyncio.Queue's own deque: look before taking
            if _without_presence(waiting[0]) is not None:
                return False
            self.output_queue.get_nowait()


async def open_socket(thread_id, user=None, *, presence: bool = False, query: str = "") -> WebsocketCommunicator:
    """A connected thread socket; with `presence`, one that shows presence
    pushes too; `query`, the URL's query string (a page's "person=…")."""
    from haico_site.asgi import application

    headers = [(b"origin", b"http://127.0.0.1:8000"), (b"host", b"127.0.0.1:8000")]
    if user is not None:
        headers.append((b"cookie", await sync_to_async(_session_cookie)(user)))
    socket_class = WebsocketCommunicator if presence else QuietPresenceSocket
    communicator = socket_class(application, f"/ws/threads/{thread_id}/" + (f"?{query}" if query else ""), headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    assert connected
    return communicator


def is_turn_end(html: str) -> bool:
    return 'id="chat-status"' in html and 'data-state="idle"' in html


async def frames_until_turn_end(communicator, timeout: float = 10.0) -> list[str]:
    """Every fragment the socket receives up to and including the end of a turn."""
    frames = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        html = await communicator.receive_from(timeout=max(0.1, deadline - loop.time()))
        frames.append(html)
        if is_turn_end(html):
            return frames


async def frame_containing(communicator, needle: str, timeout: float = 5.0) -> list[str]:
    """Fragments received up to the first that contains `needle`."""
    frames = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        html = await communicator.receive_from(timeout=max(0.1, deadline - loop.time()))
        frames.append(html)
        if needle in html:
            return frames


def stored_slot(thread):
    """The thread's running-turn slot as stored (an empty one if it never ran a turn)."""
    from conversations.models import TurnSlot

    return TurnSlot.objects.filter(thread_id=thread.pk).first() or TurnSlot(thread_id=thread.pk)


async def frames_until_closed(socket, timeout=3.0) -> tuple[list[str], int | None]:
    """What the socket sends until it closes (the close code) or goes quiet (None)."""
    frames = []
    while True:
        try:
            output = await socket.receive_output(timeout=timeout)
        except TimeoutError:
            return frames, None
        if output["type"] == "websocket.close":
            return frames, output.get("code")
        frames.append(output.get("text", ""))

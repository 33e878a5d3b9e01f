"""Usage stored once when PostgreSQL takes the COMMIT of a transaction that
inserted usage rows and the connection breaks before its answer reaches
HAICO (a failover, a proxy or a PgBouncer restarting, a network cut):
psycopg raises "server closed the connection unexpectedly", which HAICO
cannot tell from the database being away, so the rows are stored again.
Each row names its call by its key (docs/adr/0154): stored again, it is
found there, and the owner's usage counts each call once (docs/adr/0063).

Runs on PostgreSQL (the suite's PostgreSQL pass), through a TCP proxy in
front of it that cuts the connection right after forwarding such a COMMIT.
tests/conversations/test_usage.py holds the same cases on every database,
with the commit's answer lost inside the driver."""

import json
import socket
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from django.db import connection, connections

from conversations.models import ModelUsage, Turn
from conversations.turns import registry
from tests.conversations.helpers import frames_until_turn_end
from tests.support.fake_model import Reply, tool_call

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    # The proxy speaks PostgreSQL's protocol: run in the PostgreSQL pass, left out on SQLite.
    pytest.mark.postgresql_pass,
]

USAGE_INSERT = b'INSERT INTO "conversations_modelusage"'


class CommitCutProxy:
    """A TCP proxy to PostgreSQL. While `cuts` > 0, a connection that sent
    an INSERT of usage rows has its next COMMIT forwarded to the server and
    is then closed both ways before the server's answer is relayed."""

    def __init__(self, host: str, port: int):
        self.upstream = (host, port)
        self.cuts = 0
        self.cut = 0
        # Outage mode: at the next usage INSERT once `outage_armed()` says so,
        # every connection is cut and new ones refused for `outage_seconds`
        # (PostgreSQL down, then back).
        self.outage_seconds = 0.0
        self.outage_armed = lambda: True
        self.down_until = 0.0
        self.outages = 0
        self.pairs = []
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if time.monotonic() < self.down_until:
                client.close()  # refused: the database is down
                continue
            server = socket.create_connection(self.upstream)
            state = {"inserted": False, "closed": False}
            self.pairs.append((client, server, state))
            threading.Thread(target=self._up, args=(client, server, state), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, state), daemon=True).start()

    def _close(self, a, b, state):
        state["closed"] = True
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _up(self, client, server, state):
        try:
            while data := client.recv(65536):
                if USAGE_INSERT in data:
                    state["inserted"] = True
                    with self.lock:
                        outage = self.outage_seconds if self.outage_armed() else 0.0
                        if outage:
                            self.outage_seconds = 0.0
                    if outage:
                        self.outages += 1
                        self.down_until = time.monotonic() + outage
                        for pair in list(self.pairs):
                            if not pair[2]["closed"]:
                                self._close(*pair)
                        return
                commit = b"COMMIT" in data
                cut = False
                if commit and state["inserted"]:
                    with self.lock:
                        if self.cuts > 0:
                            self.cuts -= 1
                            self.cut += 1
                            cut = True
                    state["inserted"] = False
                if cut:
                    state["cutting"] = True
                    server.sendall(data)
                    time.sleep(0.3)  # the server commits
                    self._close(client, server, state)
                    return
                server.sendall(data)
        except OSError:
            pass
        if not state["closed"]:
            self._close(client, server, state)

    def _down(self, server, client, state):
        try:
            while data := server.recv(65536):
                if state.get("cutting"):
                    return  # the commit's answer never reaches the client
                client.sendall(data)
        except OSError:
            pass

    def close(self):
        self.listener.close()


@pytest.fixture
def proxy(monkeypatch):
    """Django's connections (every thread's) go through the proxy from now on."""
    settings_dict = connection.settings_dict
    proxy = CommitCutProxy(settings_dict["HOST"] or "127.0.0.1", int(settings_dict["PORT"] or 5432))
    monkeypatch.setitem(settings_dict, "HOST", "127.0.0.1")
    monkeypatch.setitem(settings_dict, "PORT", str(proxy.port))
    for conn in connections.all(initialized_only=True):
        conn.close()
    yield proxy
    proxy.close()


@pytest.fixture
async def through_proxy(proxy):
    # The worker thread that runs database_sync_to_async reconnects through the proxy too.
    await sync_to_async(lambda: [c.close() for c in connections.all(initialized_only=True)])()
    yield proxy
    await sync_to_async(lambda: [c.close() for c in connections.all(initialized_only=True)])()


@pytest.fixture
def model_server(model_server, settings):
    """The local model server (tests.support.model_server), no retries, no token limits,
    and time for a model call on a loaded machine."""
    settings.HAICO_MODEL_MAX_RETRIES = 0
    settings.HAICO_MODEL_TIMEOUT = 30.0
    settings.HAICO_DAILY_TOKEN_LIMIT = settings.HAICO_MONTHLY_TOKEN_LIMIT = 0
    return model_server


def _usage(owner):
    return list(ModelUsage.objects.filter(user=owner).order_by("pk").values_list("input_tokens", "output_tokens", "estimated"))


async def test_the_proxy_passes_a_turn_through_untouched(owner, thread, model_server, through_proxy):
    model_server.script([Reply(text="Hello.", usage={"prompt_tokens": 800, "completion_tokens": 80})])
    await registry.start_turn(thread=thread, user_message="hi")
    await registry.wait_for_turn(thread.pk, timeout=20)
    assert await sync_to_async(_usage)(owner) == [(800, 80, False)]
    assert through_proxy.cut == 0


async def test_a_usage_commit_whose_answer_was_lost_is_counted_once(owner, thread, model_server, through_proxy):
    """The database committed the watcher's batch, the answer was lost in
    the failover; the batch stored again counts each call once (the
    person's usage page and limit, staff's totals)."""
    model_server.script(
        [
            Reply(
                tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship it")],
                usage={"prompt_tokens": 700, "completion_tokens": 150},
            ),
            Reply(text="Done.", usage={"prompt_tokens": 800, "completion_tokens": 80}),
        ]
    )
    through_proxy.cuts = 1
    await registry.start_turn(thread=thread, user_message="Set the goal")
    await registry.wait_for_turn(thread.pk, timeout=30)
    rows = await sync_to_async(_usage)(owner)
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert through_proxy.cut == 1
    assert turn.status == Turn.Status.COMPLETE
    assert sorted(rows) == [(700, 150, False), (800, 80, False)], rows


async def test_a_turn_end_s_usage_commit_whose_answer_was_lost_is_counted_once(owner, thread, model_server, through_proxy):
    """As above for the usage stored with the turn's end (one quick call,
    stored in the hop that records the end)."""
    model_server.script([Reply(text="Hello.", usage={"prompt_tokens": 800, "completion_tokens": 80})])
    through_proxy.cuts = 1
    await registry.start_turn(thread=thread, user_message="hi")
    await registry.wait_for_turn(thread.pk, timeout=30)
    rows = await sync_to_async(_usage)(owner)
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert through_proxy.cut == 1
    assert (turn.status, turn.answer) == (Turn.Status.COMPLETE, "Hello.")
    assert rows == [(800, 80, False)], rows


LONG = " ".join(f"word{i}" for i in range(120))


async def test_a_streaming_calls_estimate_whose_commit_answer_was_lost_is_not_left_as_a_second_call(
    owner, thread, model_server, through_proxy
):
    """The first estimate of a streaming call was committed and its answer
    lost: the next estimates and the call's figure replace it (its key);
    none is left as a call of its own."""
    model_server.script([Reply(text=LONG, token_delay=0.02, usage={"prompt_tokens": 900, "completion_tokens": 120})])
    through_proxy.cuts = 1
    await registry.start_turn(thread=thread, user_message="Write")
    await registry.wait_for_turn(thread.pk, timeout=30)
    rows = await sync_to_async(_usage)(owner)
    assert through_proxy.cut == 1
    assert rows == [(900, 120, False)], rows


def _send(text):
    return json.dumps({"message": text, "HEADERS": {"HX-Request": "true"}})


async def test_the_database_down_as_a_turn_end_s_usage_is_stored_counts_it_once_and_the_limit_holds_next(
    owner, thread, model_server, through_proxy, sockets, settings, monkeypatch
):
    """PostgreSQL down for 3 s exactly as the usage of a turn's last call is
    inserted: the turn's end says so and then ends; the call is counted
    once when the database is back; the next message is refused at the limit."""
    settings.HAICO_DAILY_TOKEN_LIMIT = 1_500
    # The outage is for the turn end's INSERT: the turn watcher's rounds
    # store a call's estimate and the usage of calls that returned, and on
    # a loaded machine one fell within the first call, so the database went
    # down under the agent's checkpoint and the turn failed (as it should;
    # the failover tests cover that case). No round during this turn, and
    # the outage only once the model has answered twice.
    monkeypatch.setattr(registry, "SAVE_ANSWERS_SECONDS", 600)
    through_proxy.outage_armed = lambda: len(model_server.usages) >= 2
    model_server.script(
        [
            Reply(
                tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship it")],
                usage={"prompt_tokens": 700, "completion_tokens": 150},
            ),
            Reply(text="Done.", usage={"prompt_tokens": 800, "completion_tokens": 80}),
        ]
    )
    socket = await sockets(thread.pk, owner)
    through_proxy.outage_seconds = 3.0
    await socket.send_to(text_data=_send("Set the goal"))
    await frames_until_turn_end(socket, timeout=40)
    await registry.wait_for_turn(thread.pk, timeout=30)
    rows = await sync_to_async(_usage)(owner)
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert through_proxy.outages == 1
    assert sorted(rows) == [(700, 150, False), (800, 80, False)], rows
    assert turn.status == Turn.Status.COMPLETE and turn.answer == "Done."
    await socket.send_to(text_data=_send("Go on"))
    refused = await socket.receive_from(timeout=10)
    assert "You have used your 1 500 tokens for today" in refused, refused[:500]

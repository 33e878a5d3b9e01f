"""`GET /healthz`: does this server process reach what it needs?

Three checks, run at once, each bounded (CHECK_SECONDS): the database (a
fresh connection of its own runs `SELECT 1`, so a stuck request's
connection cannot hide an outage and the probe holds no connection), the
channel layer (a message sent to a new channel and received back: Redis
round trip, or the in-memory layer) and the LangGraph checkpointer (a read
through this process's saver). 200 with every part "ok", else 503 with the
failing ones "failing". Nothing else: no versions, no addresses, no error
text (that goes to the log). No login, no session; a plain-HTTP probe is
answered, not redirected (settings.SECURE_REDIRECT_EXEMPT). A check that
times out keeps running shielded, so a probe never cancels the process's
shared saver or layer halfway through opening them (docs/adr/0058).
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connections
from django.db.utils import load_backend
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from agent.checkpointer import get_checkpointer

logger = logging.getLogger("haico.health")

CHECK_SECONDS = 2.0
OK, FAILING = "ok", "failing"


def _database_answers() -> None:
    settings_dict = connections.settings["default"]
    options = dict(settings_dict.get("OPTIONS") or {})
    if connections["default"].vendor == "postgresql":
        options["connect_timeout"] = int(CHECK_SECONDS)
    wrapper = load_backend(settings_dict["ENGINE"]).DatabaseWrapper({**settings_dict, "OPTIONS": options}, "healthz")
    try:
        with wrapper.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    finally:
        wrapper.close()


async def check_database() -> None:
    await sync_to_async(_database_answers, thread_sensitive=False)()


async def check_channel_layer() -> None:
    layer = get_channel_layer()
    channel = await layer.new_channel("healthz.")
    marker = uuid.uuid4().hex
    await layer.send(channel, {"type": "healthz.ping", "marker": marker})
    message = await layer.receive(channel)
    if message.get("marker") != marker:
        raise RuntimeError("the channel layer returned another message")


async def check_checkpointer() -> None:
    saver = await get_checkpointer()
    await saver.aget_tuple({"configurable": {"thread_id": f"healthz-{uuid.uuid4().hex}", "checkpoint_ns": ""}})


CHECKS = {"database": check_database, "channel_layer": check_channel_layer, "checkpointer": check_checkpointer}


def _retrieve(task: asyncio.Task) -> None:
    # A check that outlived its probe ends unobserved; its failure was already reported.
    if not task.cancelled():
        task.exception()


async def _run(name: str, check) -> str:
    task = asyncio.ensure_future(check())
    task.add_done_callback(_retrieve)
    try:
        await asyncio.wait_for(asyncio.shield(task), CHECK_SECONDS)
    except Exception as exc:
        reason = f"no answer within {CHECK_SECONDS:.0f} s" if isinstance(exc, TimeoutError) else type(exc).__name__
        logger.warning("health check: %s is failing (%s)", name, reason)
        return FAILING
    return OK


@never_cache
@require_safe
async def healthz(request):
    names = list(CHECKS)
    results = await asyncio.gather(*(_run(name, CHECKS[name]) for name in names))
    parts = dict(zip(names, results, strict=True))
    healthy = all(result == OK for result in results)
    response = JsonResponse({"status": OK if healthy else FAILING, **parts}, status=200 if healthy else 503)
    # Each failing part has its warning above; Django would add an ERROR
    # line for every 503 of every probe as if the site had failed.
    response._has_been_logged = True
    return response

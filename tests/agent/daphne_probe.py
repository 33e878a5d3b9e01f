"""An ASGI app for the daphne shutdown test: GET /open opens the process's
checkpointer inside daphne's loop; closing it at shutdown leaves a marker file."""

import os
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "haico_site.settings")
django.setup()

from agent import checkpointer as checkpointers  # noqa: E402

MARKER = Path(os.environ["HAICO_PROBE_MARKER"])
_close = checkpointers.close_checkpointer


async def _close_and_mark():
    await _close()
    MARKER.write_text("closed")


checkpointers.close_checkpointer = _close_and_mark


async def application(scope, receive, send):
    if scope["type"] != "http":
        return
    saver = await checkpointers.get_checkpointer()
    worker = getattr(saver.conn, "_thread", None)
    body = f"open daemon={getattr(worker, 'daemon', None)}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})

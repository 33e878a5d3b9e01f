"""Which server process runs a turn.

A turn row records the process's stable name (settings.HAICO_INSTANCE) and
the id of this boot of it. A process starting under a name whose turns are
still marked running with another boot id knows its predecessor died: it
releases them at once (turns.slot.turns_release_predecessor)."""

import os
import socket
import uuid

from django.conf import settings

BOOT = uuid.uuid4().hex[:16]


def instance() -> str:
    """This process's stable name; without one, a name no other process has."""
    return settings.HAICO_INSTANCE or f"{socket.gethostname()}/pid-{os.getpid()}/{BOOT}"

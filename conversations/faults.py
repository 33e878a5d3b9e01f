"""Crash points for the tests that kill a real server at an exact moment
(settings.HAICO_CRASH_AT, docs/adr/0045).

A test starts a server with HAICO_CRASH_AT naming one of the points below;
when the server reaches it, it kills itself with SIGKILL, as a crash or the
OOM killer would: nothing after the point runs, nothing is cleaned up. The
test then starts the server again and checks what a person would find.
Unset (always, outside those tests), a crash point does nothing.
"""

import logging
import os
import signal

from django.conf import settings

logger = logging.getLogger("haico.conversations.faults")

# A Regenerate / Edit / "Continue from here" branch is made (its rows and
# history), and its turn has not begun.
BRANCH_MADE = "branch-made"
# An archive import has written the checkpointer history, and no row yet.
IMPORT_HISTORY_WRITTEN = "import-history-written"

POINTS = frozenset({BRANCH_MADE, IMPORT_HISTORY_WRITTEN})


def crash_point(name: str) -> None:
    if name not in POINTS:
        raise ValueError(f"unknown crash point {name!r}")
    if getattr(settings, "HAICO_CRASH_AT", "") == name:
        logger.warning("crash point %s reached: killing this process (HAICO_CRASH_AT)", name)
        os.kill(os.getpid(), signal.SIGKILL)

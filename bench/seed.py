"""Creates the load bench's users, threads and login sessions; prints them as JSON.

Runs as its own process with Django set up against the DATABASE_URL in its
environment (the load bench gives it the server's), because Django's
settings cannot be re-pointed at another database inside one process.
One user per client, each with one fresh thread and a logged-in database
session, so no two clients share a turn slot or a session row.

Users get an unusable password: the real hasher costs ~0.3 s per user on
purpose, and the session only needs the hash of whatever is stored.

Threads are made by `conversations.services.thread_create`, as the thread
list's "New thread" makes them.

With --share it seeds nothing: it shares one of those threads, as its
owner would from the Share dialog (conversations.sharing), with people
seeded before (bench/fanout.py).

Run: DATABASE_URL=... .venv/bin/python -m bench.seed --count 10 --prefix load
Prints [{"username": "load-0", "thread": "<uuid>", "cookie": "sessionid=<key>"}, ...].
Run: DATABASE_URL=... .venv/bin/python -m bench.seed --share <uuid> --by load-0 --editors load-1 --viewers load-2,load-3
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "haico_site.settings")


def seed(count: int, prefix: str) -> list[dict]:
    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.db import transaction

    from conversations.services import thread_create

    store_class = importlib.import_module(settings.SESSION_ENGINE).SessionStore
    user_model = get_user_model()
    clients = []
    with transaction.atomic():
        for i in range(count):
            user = user_model(username=f"{prefix}-{i}")
            user.set_unusable_password()
            user.save()
            thread = thread_create(owner=user)
            session = store_class()
            session[SESSION_KEY] = str(user.pk)
            session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
            session[HASH_SESSION_KEY] = user.get_session_auth_hash()
            session.save()
            clients.append(
                {
                    "username": user.username,
                    "thread": str(thread.pk),
                    "cookie": f"{settings.SESSION_COOKIE_NAME}={session.session_key}",
                }
            )
    return clients


def share(thread_id: str, owner: str, roles: dict[str, str]) -> None:
    """Share the thread `owner` owns with each username of `roles`, as its role ("editor" or "viewer")."""
    from django.contrib.auth import get_user_model

    from conversations.sharing import thread_member_add
    from workspace.models import Thread

    thread = Thread.objects.get(pk=thread_id, owner__username=owner)
    by = get_user_model().objects.get(username=owner)
    for who, role in roles.items():
        thread_member_add(thread=thread, who=who, role=role, by=by)


def _names(text: str) -> list[str]:
    return [name for name in text.split(",") if name]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int)
    parser.add_argument("--prefix", help="username prefix, unique per call")
    parser.add_argument("--share", metavar="THREAD", help="share this thread instead of seeding")
    parser.add_argument("--by", help="with --share: the thread's owner (username)")
    parser.add_argument("--editors", default="", help="with --share: usernames, comma-separated")
    parser.add_argument("--viewers", default="", help="with --share: usernames, comma-separated")
    args = parser.parse_args()
    if args.share and not args.by:
        parser.error("--share needs --by")
    if not args.share and (args.count is None or not args.prefix):
        parser.error("--count and --prefix are required (or --share)")
    import django

    django.setup()
    if args.share:
        share(
            args.share,
            args.by,
            {**dict.fromkeys(_names(args.editors), "editor"), **dict.fromkeys(_names(args.viewers), "viewer")},
        )
    else:
        print(json.dumps(seed(args.count, args.prefix)))

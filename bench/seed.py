"""Creates the load bench's users, threads and login sessions; prints them as JSON.

Runs as its own process with Django set up against the DATABASE_URL in its
environment (the load bench gives it the server's), because Django's
settings cannot be re-pointed at another database inside one process.
One user per client, each with one fresh thread and a logged-in database
session, so no two clients share a turn slot or a session row.

Users get an unusable password: the real hasher costs ~0.3 s per user on
purpose, and the session only needs the hash of whatever is stored.

Thread creation is looked up defensively because the app is being
restructured: a `thread_create` service in conversations or workspace, else
the `Thread` model of either app.

Run: DATABASE_URL=... .venv/bin/python -m bench.seed --count 10 --prefix load
Prints [{"thread": "<uuid>", "cookie": "sessionid=<key>"}, ...].
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


def thread_factory():
    for module_name in ("conversations.services", "workspace.services"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        create = getattr(module, "thread_create", None)
        if callable(create):
            return lambda owner: create(owner=owner)
    from django.apps import apps

    for label in ("conversations", "workspace"):
        try:
            model = apps.get_model(label, "Thread")
        except LookupError:
            continue
        return lambda owner: model.objects.create(owner=owner)
    raise RuntimeError("found neither a thread_create service nor a Thread model")


def seed(count: int, prefix: str) -> list[dict]:
    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.db import transaction

    store_class = importlib.import_module(settings.SESSION_ENGINE).SessionStore
    create_thread = thread_factory()
    user_model = get_user_model()
    clients = []
    with transaction.atomic():
        for i in range(count):
            user = user_model(username=f"{prefix}-{i}")
            user.set_unusable_password()
            user.save()
            thread = create_thread(user)
            session = store_class()
            session[SESSION_KEY] = str(user.pk)
            session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
            session[HASH_SESSION_KEY] = user.get_session_auth_hash()
            session.save()
            clients.append({"thread": str(thread.pk), "cookie": f"{settings.SESSION_COOKIE_NAME}={session.session_key}"})
    return clients


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--prefix", required=True, help="username prefix, unique per call")
    args = parser.parse_args()
    import django

    django.setup()
    print(json.dumps(seed(args.count, args.prefix)))

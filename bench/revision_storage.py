"""How many bytes the document's revisions store, against a full copy per
autosave, and what storing by content costs a save.

1 000 autosaves of a 30 000-character document, each a small edit (a few
characters typed or deleted, a word changed, a paragraph added), saved
through the document service as the editor's autosave is (based on the
current version). Each save adds a revision, its text stored by content
(docs/adr/0078): a delta against the revision before it, whole again every
MAX_CHAIN deltas. A full copy (what revisions stored before) holds every
version's text whole. Both sides count UTF-8 bytes (here: every blob's text
or delta and its key, plus an 8-byte reference per revision). Every version
is then read back and compared with what was saved. Target: <= 5 %.

Save time: the median of document_save over the run, and of the part
storing by content adds (content_store.store_text, timed inside the save);
bench/document_editing.py measures the save end to end through the view.

Run: .venv/bin/python -m bench.revision_storage [--saves 1000] [--chars 30000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(tempfile.mkdtemp(prefix="haico-revisions-"))
os.environ.update(
    DATABASE_URL=os.environ.get("HAICO_BENCH_DATABASE_URL", f"sqlite:///{BENCH_DIR / 'revisions.sqlite3'}"),
    DJANGO_SETTINGS_MODULE="haico_site.settings",
    DEBUG="False",
    SECRET_KEY=os.urandom(32).hex(),
    SECURE_SSL_REDIRECT="False",
    HAICO_LOG_LEVEL="WARNING",
)
os.environ.pop("REDIS_URL", None)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from bench.snapshot_storage import document_of  # noqa: E402
from conversations.services import thread_create  # noqa: E402
from workspace import content_store, selectors  # noqa: E402
from workspace.models import ContentBlob  # noqa: E402
from workspace.services import document as document_services  # noqa: E402

TARGET = 0.05
REFERENCE_BYTES = 8  # a bigint foreign key


def autosave_edit(text: str, rng: random.Random) -> str:
    """What changes between two autosaves: a few keys typed or deleted, a word, now and then a paragraph."""
    at = rng.randrange(len(text))
    kind = rng.choice(["type", "type", "delete", "word", "paragraph"])
    if kind == "type":
        return text[:at] + rng.choice(["a", "the ", "é", "🌍", ", and so", "\n"]) + text[at:]
    if kind == "delete":
        return text[:at] + text[at + rng.randint(1, 8) :]
    if kind == "word":
        end = text.find(" ", at)
        return text[:at] + "rewritten" + (text[end:] if end != -1 else "")
    return text[:at] + "\n\nA paragraph typed in one go, about the figures and what they show.\n\n" + text[at:]


def main(saves: int, chars: int) -> None:
    call_command("migrate", verbosity=0)
    rng = random.Random(78)
    owner = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    thread = thread_create(owner=owner, title="Revision storage")
    text = document_of(chars, rng)

    store_ms, save_ms = [], []
    store = content_store.store_text

    def timed_store(*args, **kwargs):
        start = time.perf_counter()
        try:
            return store(*args, **kwargs)
        finally:
            store_ms.append((time.perf_counter() - start) * 1000)

    document_services.content_store.store_text = timed_store  # the save's own call, timed
    saved = []
    for n in range(saves):
        if n:
            text = autosave_edit(text, rng)
        start = time.perf_counter()
        document = document_services.document_save(thread=thread, title="Report", content=text, base_version=n).document
        save_ms.append((time.perf_counter() - start) * 1000)
        saved.append(document.content)
    document_services.content_store.store_text = store

    read_ms = []
    for version, expected in enumerate(saved, start=1):
        start = time.perf_counter()
        got = selectors.document_version_text(thread=thread, version=version)
        read_ms.append((time.perf_counter() - start) * 1000)
        assert got == ("Report", expected), f"version {version} does not read back as saved"

    full_copy = sum(len(t.encode()) for t in saved)
    blobs = content_store.stored_bytes(ContentBlob)
    stored = blobs + REFERENCE_BYTES * saves
    whole = ContentBlob.objects.filter(text__isnull=False).count()
    deltas = ContentBlob.objects.filter(text__isnull=True).count()
    ratio = stored / full_copy
    print(
        f"HAICO revision storage bench ({saves} autosaves of small edits on a {chars:,}-character document; {connection.vendor})"
    )
    print(f"  full copy per save  {full_copy / 1024:9.1f} KB")
    print(
        f"  stored by content   {stored / 1024:9.1f} KB   ({whole} whole texts, {deltas} deltas, "
        f"{blobs / 1024:.1f} KB of blobs + {REFERENCE_BYTES * saves / 1024:.1f} KB of references)"
    )
    print(
        f"  ratio               {ratio * 100:9.2f} %    (target <= {TARGET * 100:.0f} %)  {'OK' if ratio <= TARGET else 'OVER'}"
    )
    print(
        f"  one autosave        {statistics.median(save_ms):9.2f} ms median, p95 {sorted(save_ms)[int(len(save_ms) * 0.95)]:.2f} ms "
        f"(of which storing the text: {statistics.median(store_ms):.2f} ms median, {max(store_ms):.2f} ms max)"
    )
    print(
        f"  read one version    {statistics.median(read_ms):9.2f} ms median, {max(read_ms):.2f} ms max "
        f"(at most {content_store.MAX_CHAIN} deltas rebuilt); all {saves} read back exactly"
    )
    print(json.dumps({"full_copy_bytes": full_copy, "stored_bytes": stored, "ratio": round(ratio, 4)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=1000)
    parser.add_argument("--chars", type=int, default=30_000)
    arguments = parser.parse_args()
    main(arguments.saves, arguments.chars)

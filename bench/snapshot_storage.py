"""How many bytes the per-turn snapshots store, against a full copy per turn.

100 turns on a 30 000-character document: before each turn the person or
the agent makes a small edit (a word changed, a sentence added, a line
removed, now and then a step of the plan ticked or a preference added), and
the turn starts through the real turn runner's `turn_begin`, which captures
the snapshot (docs/adr/0015). A full copy (what snapshots stored before
0015) puts the document text, the preferences JSON and the plan JSON into
every snapshot row; here they are content blobs, whole or as deltas. Both
sides count the UTF-8 bytes of what they hold (a full copy: the three copies
per row; here: the three references per row plus every blob's text or delta
and its key), so
the ratio is the storage the change saves, whatever the database's own
overhead. Every snapshot is then read back and compared with what was
captured. Target: <= 5 %.

Run: .venv/bin/python -m bench.snapshot_storage [--turns 100] [--chars 30000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import as_if_every_thread_were_open, set_up_django  # noqa: E402

set_up_django(
    prefix="haico-snapshots-", database_file="snapshots.sqlite3", database_url=os.environ.get("HAICO_BENCH_DATABASE_URL")
)

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from conversations.services import thread_create  # noqa: E402
from conversations.turns import slot  # noqa: E402
from conversations.turns.slot import turn_begin, turn_finish  # noqa: E402
from workspace import content_store, selectors  # noqa: E402
from workspace.models import ContentBlob, WorkspaceSnapshot  # noqa: E402
from workspace.services import document as document_services  # noqa: E402
from workspace.services import plan as plan_services  # noqa: E402
from workspace.services import preferences as preference_services  # noqa: E402
from workspace.services.snapshots import snapshot_json  # noqa: E402

TARGET = 0.05
REFERENCE_BYTES = 8  # a bigint foreign key


def document_of(chars: int, rng: random.Random) -> str:
    words = "the of and report data survey results method sample analysis review source figure table".split()
    paragraphs, size = [], 0
    while size < chars:
        sentence_count = rng.randint(2, 6)
        paragraph = " ".join(
            " ".join(rng.choice(words) for _ in range(rng.randint(6, 16))).capitalize() + "." for _ in range(sentence_count)
        )
        paragraphs.append(paragraph + "\n\n")
        size += len(paragraphs[-1])
    return "".join(paragraphs)[:chars]


def small_edit(text: str, rng: random.Random) -> str:
    """One edit a person or the agent makes between two turns."""
    kind = rng.choice(["word", "word", "sentence", "line"])
    at = rng.randrange(len(text))
    if kind == "word":
        start = text.rfind(" ", 0, at) + 1
        end = text.find(" ", at)
        end = len(text) if end == -1 else end
        return text[:start] + rng.choice(["revised", "clearer", "Ü-umlaut", "🌍", "more"]) + text[end:]
    if kind == "sentence":
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        return text[:end] + " An added sentence about the figures." + text[end:]
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[:start] + text[end + 1 :] if end != -1 else text[:start]


def main(turns: int, chars: int) -> None:
    call_command("migrate", verbosity=0)
    as_if_every_thread_were_open()
    rng = random.Random(15)
    owner = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    thread = thread_create(owner=owner, title="Snapshot storage")
    plan_services.todos_add_outline(
        thread=thread, steps=[{"text": f"Step {i} of the plan", "depth": [0, 1, 1][i % 3]} for i in range(30)]
    )
    for i in range(10):
        preference_services.preference_add(thread=thread, title=f"Preference {i}", respect_lock=False)
    text = document_of(chars, rng)
    document_services.document_save(thread=thread, title="Report", content=text)

    captured, capture_ms, turn_begin_ms = [], [], []
    capture = slot.snapshot_capture

    def timed_capture(**kwargs):
        start = time.perf_counter()
        try:
            return capture(**kwargs)
        finally:
            capture_ms.append((time.perf_counter() - start) * 1000)

    slot.snapshot_capture = timed_capture  # the turn runner's own call, timed
    for turn in range(1, turns + 1):
        if turn > 1:
            for _ in range(rng.randint(1, 3)):
                text = small_edit(text, rng)
            document_services.document_save(thread=thread, content=text)
            if turn % 7 == 0:
                step = selectors.todos_for(thread=thread)[turn % 30]
                plan_services.todo_set_done(todo=step, done=not step.done)
            if turn % 20 == 0:
                preference_services.preference_add(thread=thread, title=f"Learned in turn {turn}", respect_lock=False)
        start = time.perf_counter()
        index, snapshot = turn_begin(thread=thread, user_message=f"Message of turn {turn}")
        turn_begin_ms.append((time.perf_counter() - start) * 1000)
        turn_finish(thread=thread, turn_index=index)
        reading = selectors.workspace_reading_for(thread=thread)
        captured.append((index, reading.document.content, len(reading.preferences), len(reading.todos)))

    # A full copy: each row holds the three values whole.
    full_copy = 0
    stored_rows = 0
    read_ms = []
    for index, content, preference_count, todo_count in captured:
        start = time.perf_counter()
        snapshot = selectors.snapshot_for(thread=thread, turn_index=index)
        document, preferences, todos = snapshot.document_content, snapshot.preferences_json, snapshot.todos_json
        read_ms.append((time.perf_counter() - start) * 1000)
        assert document == content, f"turn {index}: the document does not read back as captured"
        assert (len(preferences), len(todos)) == (preference_count, todo_count), f"turn {index}"
        full_copy += sum(len(t.encode()) for t in (document, snapshot_json(preferences), snapshot_json(todos)))
        stored_rows += 3 * REFERENCE_BYTES
    blobs = content_store.stored_bytes(ContentBlob)
    stored = stored_rows + blobs
    whole = ContentBlob.objects.filter(text__isnull=False).count()
    deltas = ContentBlob.objects.filter(text__isnull=True).count()
    document_bytes = sum(len(c.encode()) for _, c, _, _ in captured)
    assert WorkspaceSnapshot.objects.filter(thread=thread).count() == turns

    ratio = stored / full_copy
    print(
        f"HAICO snapshot storage bench ({turns} turns of 1-3 small edits on a {chars:,}-character document, "
        f"30 plan steps, 10+ preferences; {connection.vendor})"
    )
    print(
        f"  full copy per turn  {full_copy / 1024:9.1f} KB   (document {document_bytes / 1024:.1f} KB "
        f"+ preferences and plan JSON, per row)"
    )
    print(
        f"  stored by content   {stored / 1024:9.1f} KB   ({whole} whole texts, {deltas} deltas, "
        f"{blobs / 1024:.1f} KB of blobs + {stored_rows / 1024:.1f} KB of references)"
    )
    print(
        f"  ratio               {ratio * 100:9.2f} %    (target <= {TARGET * 100:.0f} %)  {'OK' if ratio <= TARGET else 'OVER'}"
    )
    print(
        f"  snapshot capture    {statistics.median(capture_ms):9.2f} ms median, {max(capture_ms):.2f} ms max "
        f"(of turn_begin's {statistics.median(turn_begin_ms):.2f} ms median, commit and live patches included)"
    )
    print(
        f"  read one snapshot   {statistics.median(read_ms):9.2f} ms median, {max(read_ms):.2f} ms max "
        f"(at most {content_store.MAX_CHAIN} deltas rebuilt); all {turns} read back exactly"
    )
    print(json.dumps({"full_copy_bytes": full_copy, "stored_bytes": stored, "ratio": round(ratio, 4)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--chars", type=int, default=30_000)
    arguments = parser.parse_args()
    main(arguments.turns, arguments.chars)

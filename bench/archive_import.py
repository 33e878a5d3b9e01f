"""What a large archive import costs everyone else (docs/adr/0049).

One real server (haico_site.serve, production settings) on a fresh SQLite
database (or HAICO_BENCH_DATABASE_URL). Alice imports a thread archive of
about 15 MB through the real upload view (/threads/import/); meanwhile Bob,
another person, renames his own thread through the real rename view every
RENAME_EVERY seconds. Printed: how long the import took, and how long each of
Bob's renames took before and during it (p50, p95, max) and how many failed.
A rename is one small write transaction, so its time during the import is the
time it waited for the database (and the server), which is what the import
must keep to a fraction of a second.

The archive is a thread as a long collaboration leaves it: a 40 000-character
document with 220 versions, 100 turns (each a snapshot, a user message, a
tool call, its result and an answer), 50 objective changes, 20 preferences,
60 plan steps, 30 artifacts (--mb scales the versions and turns). It is made
here, in the archive format, not exported from a server, so the bench needs
no model.

With --history N the archive is instead one document's long life: N
revisions of a --chars character document (190 000 by default, near the
200 000-character limit), each a word typed somewhere, carried as deltas as
an export writes them (archive version 2, docs/adr/0123).

With --two-servers Bob's renames go through a second server process on the
same database, so what they wait for is the database alone; with one
process they also share its CPU with the import (parsing 15 MB of JSON).

Run: .venv/bin/python -m bench.archive_import [--mb 15 | --history 20000 [--chars 190000]]
     [--rename-every 0.1] [--two-servers]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import percentile  # noqa: E402
from bench.load import STATIC_ROOT, Resources, child_env, collect_static, http_get  # noqa: E402
from tests.support.ports import free_port  # noqa: E402

PYTHON = sys.executable
WORDS = "the of and report data survey results method sample analysis review source figure table launch".split()
# Any 32 characters of the CSRF alphabet: Django accepts the unmasked secret
# in the header when it equals the cookie's.
CSRF_SECRET = "benchbenchbenchbenchbenchbench32"


# --- the archive ------------------------------------------------------------------


def paragraph(rng: random.Random) -> str:
    sentences = (
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))).capitalize() + "." for _ in range(rng.randint(2, 6))
    )
    return " ".join(sentences)


def document_of(chars: int, rng: random.Random) -> str:
    parts, size = ["# Launch note\n\n"], 15
    while size < chars:
        parts.append(paragraph(rng) + "\n\n")
        size += len(parts[-1])
    return "".join(parts)[:chars]


def edited(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text))
    return text[:at] + " " + rng.choice(WORDS) + text[at:]


def iso(moment: datetime) -> str:
    return moment.isoformat()


def build_archive(*, target_mb: float, seed: int = 7) -> bytes:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict

    rng = random.Random(seed)
    start = datetime.now(UTC) - timedelta(days=30)
    scale = target_mb / 15  # the sizes below make about 15 MB
    turns = max(1, round(100 * scale))
    revisions_count = max(1, round(220 * scale))
    text = document_of(40_000, rng)
    revisions, texts = [], []
    for version in range(1, revisions_count + 1):
        text = edited(text, rng)
        texts.append(text)
        revisions.append(
            {
                "version": version,
                "title": "Launch",
                "content": text,
                "author": rng.choice(["person", "agent"]),
                "turn": min(turns, version * turns // revisions_count),
                "at": iso(start + timedelta(minutes=version * 10)),
            }
        )
    plan = [{"text": f"Step {n}: {paragraph(rng)[:80]}", "done": n % 3 == 0, "depth": 0 if n % 4 == 0 else 1} for n in range(60)]
    preferences = [
        {"title": f"Rule {n}", "subtitle": paragraph(rng)[:200], "kind": "hard" if n < 5 else "soft", "locked": n % 7 == 0}
        for n in range(20)
    ]
    messages, turn_rows, snapshots = [], [], []
    for turn in range(1, turns + 1):
        at = start + timedelta(minutes=turn * 22)
        question = f"Turn {turn}: {paragraph(rng)}"
        answer = "\n\n".join(paragraph(rng) for _ in range(8))
        call_id = f"call_{turn}"
        messages += [
            HumanMessage(question, response_metadata={"haico_turn_index": turn}),
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "set_objective",
                        "args": {"text": f"Goal {turn}", "action_and_reasoning": "Noting the goal."},
                        "id": call_id,
                    }
                ],
            ),
            ToolMessage('{"success": true}', tool_call_id=call_id, name="set_objective"),
            AIMessage(answer),
        ]
        turn_rows.append(
            {
                "index": turn,
                "user_message": question,
                "model": "bench",
                "status": "complete",
                "answer": answer,
                "cut_off": False,
                "notice": "",
                "retry_of": None,
                "started_at": iso(at),
                "ended_at": iso(at + timedelta(seconds=40)),
            }
        )
        snapshots.append(
            {
                "turn": turn,
                "user_message": question,
                "document_title": "Launch",
                "document_content": texts[min(len(texts) - 1, turn * revisions_count // turns - 1)],
                "objective": f"Goal {turn - 1}" if turn > 1 else None,
                "preferences": preferences,
                "plan": plan,
                "at": iso(at),
            }
        )
    archive = {
        "format": "haico.thread",
        "version": 1,
        "exported_at": iso(datetime.now(UTC)),
        "thread": {
            "id": str(uuid.uuid4()),
            "title": "A long collaboration",
            "turns": turns,
            "mode": "execute",
            "chat_model": "",
            "created_at": iso(start),
        },
        "workspace": {
            "objective": f"Goal {turns}",
            "objective_history": [
                {"text": f"Goal {n}", "author": "agent", "turn": min(turns, n * 2), "at": iso(start + timedelta(minutes=n * 44))}
                for n in range(1, 51)
            ],
            "preferences": preferences,
            "plan": plan,
            "document": {
                "title": "Launch",
                "content": text,
                "version": revisions_count,
                "revisions": revisions,
                "review_decisions": [],
            },
            "artifacts": [
                {
                    "artifact_type": "bar_chart",
                    "title": f"Chart {n}",
                    "turn": n,
                    "payload": {"title": f"Chart {n}", "data": [{"name": f"Q{q}", "value": q * n} for q in range(1, 30)]},
                    "at": iso(start + timedelta(minutes=n * 22)),
                }
                for n in range(1, 31)
            ],
            "snapshots": snapshots,
        },
        "transcript": {"turns": turn_rows, "messages": messages_to_dict(messages)},
        "branches": {"parent": None, "children": []},
    }
    raw = json.dumps(archive, ensure_ascii=False, indent=1).encode()
    # Pad with more revisions' worth of text if short of the target (never trimmed: it stays valid).
    if len(raw) < target_mb * 1_000_000 * 0.9:
        print(f"  note: the archive is {len(raw) / 1e6:.1f} MB, under the {target_mb} MB asked for", file=sys.stderr)
    return raw


def build_long_history(*, revisions_count: int, chars: int, seed: int = 11) -> bytes:
    """One document autosaved `revisions_count` times, each revision after the
    first a delta against the one before (one word typed), as an export
    writes it (archive version 2)."""
    rng = random.Random(seed)
    start = datetime.now(UTC) - timedelta(days=30)
    text = document_of(chars, rng)
    revisions = [{"version": 1, "title": "Launch", "content": text, "author": "person", "turn": 0, "at": iso(start)}]
    for version in range(2, revisions_count + 1):
        at = rng.randrange(len(text))
        word = " " + rng.choice(WORDS)
        if len(text) + len(word) > chars:  # stays near its length: a word typed, one removed at the end
            text = text[: -len(word)]
            base = len(text)
            delta: list = [[0, at], word, [at, base - at]] if at < base else [[0, base], word]
        else:
            base = len(text)
            delta = [[0, at], word, [at, base - at]]
        text = text[:at] + word + text[at:]
        revisions.append(
            {
                "version": version,
                "title": "Launch",
                "delta": delta,
                "author": "person",
                "turn": 0,
                "at": iso(start + timedelta(seconds=version * 20)),
            }
        )
    archive = {
        "format": "haico.thread",
        "version": 2,
        "exported_at": iso(datetime.now(UTC)),
        "thread": {
            "id": str(uuid.uuid4()),
            "title": "A long document",
            "turns": 0,
            "mode": "execute",
            "chat_model": "",
            "created_at": iso(start),
        },
        "workspace": {
            "objective": None,
            "objective_history": [],
            "preferences": [],
            "plan": [],
            "document": {
                "title": "Launch",
                "content": text,
                "version": revisions_count,
                "revisions": revisions,
                "review_decisions": [],
            },
            "artifacts": [],
            "snapshots": [],
        },
        "transcript": {"turns": [], "messages": []},
        "branches": {"parent": None, "children": []},
    }
    return json.dumps(archive, ensure_ascii=False).encode()


# --- HTTP --------------------------------------------------------------------------


def _headers(cookie: str) -> dict:
    return {"Cookie": f"{cookie}; csrftoken={CSRF_SECRET}", "X-CSRFToken": CSRF_SECRET}


def post(url: str, *, cookie: str, body: bytes, content_type: str, timeout: float = 300.0) -> tuple[int, float]:
    request = urllib.request.Request(url, data=body, method="POST", headers={**_headers(cookie), "Content-Type": content_type})
    started = time.perf_counter()
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError:
        status = 0
    return status, time.perf_counter() - started


def upload(url: str, *, cookie: str, raw: bytes) -> tuple[int, float]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="archive"; filename="big.haico.json"\r\n'
            "Content-Type: application/json\r\n\r\n"
        ).encode()
        + raw
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return post(url, cookie=cookie, body=body, content_type=f"multipart/form-data; boundary={boundary}")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is the answer (302: done), not something to follow."""

    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)


def rename(base: str, client: dict, n: int) -> tuple[int, float]:
    body = urllib.parse.urlencode({"title": f"Bob's thread {n}"}).encode()
    return post(
        f"{base}/threads/{client['thread']}/rename/",
        cookie=client["cookie"],
        body=body,
        content_type="application/x-www-form-urlencoded",
        timeout=60.0,
    )


def renames_while(base: str, client: dict, *, every: float, until: threading.Event) -> list[tuple[int, float, float]]:
    """(status, seconds, when it started) of each rename until `until` is set."""
    results, n = [], 0
    while not until.is_set():
        n += 1
        at = time.perf_counter()
        results.append((*rename(base, client, n), at))
        time.sleep(every)
    return results


def summary(results: list[tuple]) -> str:
    times = [r[1] * 1000 for r in results]
    failed = [r[0] for r in results if r[0] not in (200, 302)]
    return (
        f"{len(results):4d} renames  p50 {percentile(times, 50):7.1f} ms  p95 {percentile(times, 95):7.1f} ms  "
        f"max {max(times):7.1f} ms  failed {len(failed)}{' ' + str(sorted(set(failed))) if failed else ''}"
    )


# --- the run -----------------------------------------------------------------------


def start_server(res: Resources, env: dict, name: str) -> str:
    port = free_port()
    server = res.spawn(
        [PYTHON, "-m", "haico_site.serve", "-b", "127.0.0.1", "-p", str(port)], log=res.dir / f"{name}.log", env=env
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if http_get(f"{base}/accounts/login/", timeout=2)[0] == 200:
                return base
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start; see {res.dir / f'{name}.log'}")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=15.0, help="archive size to aim for (default 15)")
    parser.add_argument(
        "--history", type=int, default=0, help="instead: one document with this many revisions, as deltas (e.g. 20000)"
    )
    parser.add_argument("--chars", type=int, default=190_000, help="that document's length (default 190 000)")
    parser.add_argument("--rename-every", type=float, default=0.1, help="seconds between Bob's renames")
    parser.add_argument(
        "--two-servers",
        action="store_true",
        help="Bob uses a second server process on the same database: what is left is the "
        "database's wait alone, not the one process's CPU shared with the import",
    )
    args = parser.parse_args()

    res = Resources()
    try:
        url = os.environ.get("HAICO_BENCH_DATABASE_URL") or f"sqlite:///{res.dir / 'archive.sqlite3'}"
        if url.startswith("sqlite"):
            res.files.append(Path(url.removeprefix("sqlite:///")))
        # Production pages name hashed static files: collected once, as deploy/start.sh does.
        collect_static(res)
        env = child_env(
            DATABASE_URL=url,
            STATIC_ROOT=str(STATIC_ROOT[0]),
            DEBUG="False",
            SECRET_KEY=os.urandom(32).hex(),
            SECURE_SSL_REDIRECT="False",
            ALLOWED_HOSTS="127.0.0.1",
            DJANGO_SETTINGS_MODULE="haico_site.settings",
            HAICO_LOG_LEVEL="INFO",
        )
        subprocess.run([PYTHON, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        seeded = subprocess.run(
            [PYTHON, "-m", "bench.seed", "--count", "2", "--prefix", "archive"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        alice, bob = json.loads(seeded.stdout)
        if args.history:
            raw = build_long_history(revisions_count=args.history, chars=args.chars)
            print(f"{args.history} revisions of a {args.chars:,}-character document")
        else:
            raw = build_archive(target_mb=args.mb)
        print(f"archive: {len(raw) / 1e6:.1f} MB; database: {url.split(':', 1)[0]}")

        base = start_server(res, env, "server")
        bob_base = start_server(res, env, "server-bob") if args.two_servers else base
        print("Bob renames through a second server process" if args.two_servers else "one server process")

        idle = [rename(bob_base, bob, n) for n in range(20)]
        print(f"alone:          {summary(idle)}")

        done = threading.Event()
        collected: list = []
        renamer = threading.Thread(
            target=lambda: collected.extend(renames_while(bob_base, bob, every=args.rename_every, until=done))
        )
        renamer.start()
        time.sleep(0.5)
        sent = time.perf_counter()
        status, seconds = upload(f"{base}/threads/import/", cookie=alice["cookie"], raw=raw)
        done.set()
        renamer.join()
        print(f"during import:  {summary(collected)}")
        slowest = sorted(collected, key=lambda r: -r[1])[:3]
        print("  slowest: " + ", ".join(f"{r[1] * 1000:.0f} ms at {r[2] - sent:+.1f} s" for r in slowest))
        print(f"import: HTTP {status} in {seconds:.1f} s")
        said = [line for line in (res.dir / "server.log").read_text(errors="replace").splitlines() if "imported a" in line]
        if said:
            print(f"  the server: {said[-1].strip()}")
        if status != 302:
            print(f"  the import was not accepted; see {res.dir / 'server.log'}")
    finally:
        res.cleanup()


if __name__ == "__main__":
    main()

"""What one database step of a turn costs on PostgreSQL, against a bare round trip, in one run.

Every database step of a turn (a tool call, the turn's claim, an activity
entry, the end of a turn) is a `database_sync_to_async` call: Django's
connection is made ready (`close_old_connections`, which has the next
query check a reused connection), the work runs in the database thread,
and the loop gets the result. This bench times a step whose work is one
statement (`SELECT 1`), the smallest a step can be, three ways, interleaved
in one process against the same server:

- floor: the same statement on a bare psycopg connection, run in a
  one-thread executor as the step is: the round trip and the hop to the
  thread, nothing else;
- HAICO: the step as the app runs it (`haico_site.postgresql`, which asks
  a reused connection `SELECT 1` only where its socket shows a sign of its
  end: docs/adr/0170);
- stock: the same step on Django's own PostgreSQL backend, which asks every
  reused connection first (one more round trip a step).

Figures: µs per step (medians over repeats) and the ratio of each to the
floor. With the database on another machine, each round trip saved is
that network's latency too.

Run: .venv/bin/python -m bench.database_step [--steps 2000] [--repeats 7]
PostgreSQL from HAICO_TEST_POSTGRES_URL, else scripts/test_services.sh
start. The machine is noisy; compare the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.load import ensure_services  # noqa: E402

POSTGRES_URL, _ = ensure_services()
os.environ["DATABASE_URL"] = POSTGRES_URL  # the server's maintenance database: a step reads no table
os.environ.pop("REDIS_URL", None)
os.environ.setdefault("DEBUG", "False")
os.environ.setdefault("SECRET_KEY", os.urandom(32).hex())
os.environ.setdefault("SECURE_SSL_REDIRECT", "False")
os.environ["HAICO_LOG_LEVEL"] = "WARNING"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "haico_site.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from channels.db import database_sync_to_async  # noqa: E402
from django.db import connections  # noqa: E402
from django.db.utils import load_backend  # noqa: E402


def one_statement(connection) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


async def per_step_us(step, steps: int) -> float:
    started = time.perf_counter()
    for _ in range(steps):
        await step()
    return (time.perf_counter() - started) / steps * 1_000_000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    loop = asyncio.get_running_loop()
    bare_thread = ThreadPoolExecutor(max_workers=1)
    bare = await loop.run_in_executor(bare_thread, lambda: psycopg.connect(POSTGRES_URL, autocommit=True))
    settings_dict = connections["default"].settings_dict
    # Made in the database thread, where the steps use it (Django's wrappers belong to one thread).
    stock = await database_sync_to_async(
        lambda: load_backend("django.db.backends.postgresql").DatabaseWrapper(dict(settings_dict), "stock")
    )()

    def stock_step() -> None:
        # What close_old_connections does for the connections Django manages.
        stock.close_if_unusable_or_obsolete()
        one_statement(stock)

    ways = {
        "floor": lambda: loop.run_in_executor(bare_thread, lambda: bare.execute("SELECT 1").fetchone()),
        "HAICO": database_sync_to_async(lambda: one_statement(connections["default"])),
        "stock": database_sync_to_async(stock_step),
    }
    for step in ways.values():  # connect, warm up
        await per_step_us(step, 200)
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeats):
        for name, step in ways.items():
            times[name].append(await per_step_us(step, args.steps))
    await database_sync_to_async(stock.close)()
    await loop.run_in_executor(bare_thread, bare.close)

    floor = statistics.median(times["floor"])
    print(f"HAICO database step bench ({args.repeats} interleaved repeats of {args.steps} steps, medians, PostgreSQL)")
    print(f"  floor  (bare psycopg, one-thread executor):      {floor:7.0f} µs a step")
    for name, label in (
        ("HAICO", "HAICO  (the app's step, checked by its socket): "),
        ("stock", "stock  (Django's backend, SELECT 1 first):       "),
    ):
        median = statistics.median(times[name])
        print(f"  {label}{median:7.0f} µs a step   {median / floor:5.2f} x floor")


if __name__ == "__main__":
    asyncio.run(main())

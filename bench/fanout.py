"""Fan-out bench: one turn streamed to the many open tabs of a shared thread, against one tab, in one run.

A thread shared with a team is open in many tabs at once; every token of a
turn goes to each of them (conversations.live, through the channel layer to
the other server). This bench measures what that costs a tab, on the
scale-out setup: PostgreSQL + Redis, two daphne servers (bench/load.py's
pg2: a fresh migrated database, production settings), the scripted model
server (bench/model_server.py: `--latency` s before each reply, a turn is
one tool call then `--tokens` answer tokens at `--rate`/s, each token
carrying its emit time) and the socket clients of bench/ws_clients.py.

In one run:
0. seed `--people` people (bench/seed.py), each with a session; start both
   servers; warm them up (`--warmup` turns per server on the warm-up
   people's own threads, plus one turn on the owner's thread, unmeasured).
1. the owner (person 0) shares the thread (conversations.sharing, as the
   Share dialog does) with the other people, editors and viewers in turn.
2. `--turns` rounds of each phase, the two phases taking turns round by
   round, so that a change in the machine's load falls on both alike:
   - one tab: the owner's only, on the first server, nobody else's open;
   - fan-out: `--tabs` sockets on the thread, spread evenly over the people
     (5 each with the defaults) and over both servers (each person has tabs
     on both).
   Each round's turn is sent from the owner's first tab (on the first
   server, where the turn runs); every other tab only reads.
Each round connects its tabs, throws away for `--settle` s what a page is
sent on connecting (how the thread's latest turn ended), then sends.

Figures: token delay = receipt in a tab - emit by the model, every token in
every tab, p50/p99 (nearest rank) per phase, and for the fan-out also split
by the tab's server (the one running the turn hands frames to its sockets
directly; the other gets them through Redis). Per turn, averaged: "turn s"
from the send to the last tab's turn end; "server CPU" and "client CPU",
seconds of CPU the servers the tabs use and the client process spent (the
clients share the 2 cores with the servers). "dropped": a tab, in a turn,
that missed a token or the turn's end (bench/ws_clients.py's errors: too
few tokens, no end within `--timeout`, socket closed, a resync patch, a
failed or refused turn). The target (issue 17): p99(fan-out) within 1.5x
p99(one tab), nothing dropped. The bench exits 1 if anything was dropped or
any turn failed (warm-up included), after printing the table.

Run: .venv/bin/python -m bench.fanout [--tabs 50 --people 10] [--turns 10] [--redis-db 14]
PostgreSQL and Redis come from HAICO_TEST_POSTGRES_URL / HAICO_TEST_REDIS_URL
(else scripts/test_services.sh start); the Redis database `--redis-db` is
flushed. About three minutes on 2 cores. Logs (servers, clients, model server)
are kept in a directory printed at the start and the end.

Limits: the one-tab p99 is over `--turns` x `--tokens` tokens (the 6th
highest of 600 with the defaults), so a few late tokens move it; compare
repeated runs, not one ratio. A tab is a socket reader: a delay ends when the frame
arrives, not when htmx has swapped it in.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from collections import Counter
from dataclasses import dataclass, field

from bench.common import percentile, raise_open_file_limit
from bench.load import (
    CONFIGS,
    BenchError,
    Resources,
    _raise_interrupt,
    client_round,
    collect_static,
    ensure_services,
    flush_redis,
    prepare_database,
    print_server_tracebacks,
    redis_db_url,
    run_seed,
    seed_clients,
    server_env,
    start_model_server,
    start_servers,
)

TARGET_P99_RATIO = 1.5
CONFIG = CONFIGS["pg2"]


@dataclass
class Phase:
    """Every token delay (ms) and every dropped tab-turn of a phase's rounds."""

    label: str
    tabs: int
    people: int
    delays: list[float] = field(default_factory=list)
    delays_by_server: dict[int, list[float]] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    server_cpu: float = 0.0
    client_cpu: float = 0.0
    turn_seconds: float = 0.0
    reader_lag: list[float] = field(default_factory=list)
    read_delays: list[float] = field(default_factory=list)

    def add_round(self, result: dict, servers: int, turn: int) -> None:
        for entry in result["turns"]:
            self.delays += entry["delays"]
            self.delays_by_server.setdefault(entry["client"] % servers, []).extend(entry["delays"])
            if entry["error"]:
                self.dropped.append(f"turn {turn}: {entry['error']}")
        self.dropped += [f"turn {turn}: {e}" for e in result["errors"] if e.startswith("connect failed")]
        self.server_cpu += result["server_cpu"]
        self.client_cpu += result["client_cpu"]
        self.reader_lag += result.get("reader_lag", [])
        self.read_delays += result.get("read_delays", [])
        self.turn_seconds += result["t_end"] - result["t0"]


def tabs_of(people: list[dict], thread: str, tabs: int) -> list[dict]:
    """`tabs` open tabs of `thread`, spread evenly over `people`, person by
    person (the owner first): with tab i on server i mod 2, each person has
    tabs on both servers. Only the first tab, the owner's, sends."""
    opened = []
    for p, person in enumerate(people):
        for _ in range(tabs // len(people) + (1 if p < tabs % len(people) else 0)):
            opened.append({"thread": thread, "cookie": person["cookie"], "listens_only": bool(opened)})
    return opened


def run_turns(phases: list[tuple[Phase, list, list[dict]]], args, res: Resources) -> None:
    """`args.turns` rounds of each phase, the phases taking turns round by
    round: a change in the machine's load during the run then falls on both
    sides of the ratio alike, instead of on whichever phase ran last."""
    for turn in range(1, args.turns + 1):
        for phase, servers, tabs in phases:
            result = client_round(servers, tabs, args, res, settle=args.settle)
            phase.add_round(result, len(servers), turn)
            print(
                f"  {phase.label}: turn {turn}: {len(result['delays'])} token receipts, p99 "
                f"{percentile(result['delays'], 99):.1f} ms, {len(result['errors'])} dropped",
                flush=True,
            )


def measure(args, res: Resources, services: tuple[str, str]) -> tuple[Phase, Phase, list[str]]:
    """(one tab, fan-out, warm-up errors)."""
    redis_url = redis_db_url(services[1], args.redis_db)
    flush_redis(redis_url)
    collect_static(res)
    model_port = start_model_server(args, res)
    database_url = prepare_database(CONFIG, args, res, services)
    env = server_env(CONFIG, database_url, model_port, redis_url)
    seeded = seed_clients(env, args.people + CONFIG.processes * args.warmup, "fanout", res)
    people, warm_people = seeded[: args.people], seeded[args.people :]
    owner = people[0]
    servers = start_servers(CONFIG, env, res, "fanout")
    try:
        print(f"  servers on ports {', '.join(str(s.port) for s in servers)}; warming up", flush=True)
        warmup = client_round(servers, [owner, *warm_people], args, res, settle=args.settle)
        warmup_errors = [f"[warm-up] {e}" for e in warmup["errors"]]

        others = [person["username"] for person in people[1:]]
        run_seed(
            env,
            ["--share", owner["thread"], "--by", owner["username"], "--editors", ",".join(others[0::2])]
            + ["--viewers", ",".join(others[1::2])],
            res,
        )
        # The one tab is the owner's, on the thread as shared, while nobody
        # else has it open: the same thread and rows as the fan-out's turns.
        one_tab = Phase("one tab", tabs=1, people=1)
        fan_out = Phase(f"{args.tabs} tabs", tabs=args.tabs, people=args.people)
        run_turns(
            [
                (one_tab, servers[:1], tabs_of([owner], owner["thread"], 1)),
                (fan_out, servers, tabs_of(people, owner["thread"], args.tabs)),
            ],
            args,
            res,
        )
    finally:
        for server in servers:
            if res.stop(server.proc):
                print(f"  daphne pid {server.proc.pid} ignored SIGTERM for 15 s (killed)", file=sys.stderr)
    return one_tab, fan_out, warmup_errors


def _lag(lags: list[float]) -> str:
    return f"{percentile(lags, 50):.2f}/{percentile(lags, 99):.2f}" if lags else "-"


def verdict(ok: bool) -> str:
    return "OK" if ok else "OVER"


def print_report(one_tab: Phase, fan_out: Phase, warmup_errors: list[str], args, res: Resources) -> None:
    print()
    print(
        f"HAICO fan-out bench: PostgreSQL + Redis, two servers; model latency {args.latency:.2f} s, "
        f"{args.tokens} tokens at {args.rate:g}/s; {args.turns} turn(s) per phase; {os.cpu_count()} cores"
    )
    header = (
        f"{'':26s} {'tabs':>5s} {'people':>6s} {'receipts':>8s} {'p50 ms':>7s} {'p99 ms':>7s} {'dropped':>7s} "
        f"{'turn s':>6s} {'server CPU':>10s} {'client CPU':>10s} {'lag p50/p99':>11s}"
    )
    print(header)
    print("-" * len(header))
    for phase in (one_tab, fan_out):
        print(
            f"{phase.label:26s} {phase.tabs:5d} {phase.people:6d} {len(phase.delays):8d} "
            f"{percentile(phase.delays, 50):7.1f} {percentile(phase.delays, 99):7.1f} {len(phase.dropped):7d} "
            f"{phase.turn_seconds / args.turns:6.2f} {phase.server_cpu / args.turns:10.2f} {phase.client_cpu / args.turns:10.2f} "
            f"{_lag(phase.reader_lag):>11s}"
        )
    for server, label in ((0, "  tabs on the turn's server"), (1, "  tabs on the other server")):
        delays = fan_out.delays_by_server.get(server, [])
        print(f"{label:26s} {'':5s} {'':6s} {len(delays):8d} {percentile(delays, 50):7.1f} {percentile(delays, 99):7.1f}")

    ratio = percentile(fan_out.delays, 99) / percentile(one_tab.delays, 99)
    dropped = len(one_tab.dropped) + len(fan_out.dropped)
    read_ratio = percentile(fan_out.read_delays, 99) / percentile(one_tab.read_delays, 99)
    print(
        f"\ntaken when this one process read the bytes instead of when they arrived: p50/p99 one tab "
        f"{percentile(one_tab.read_delays, 50):.1f}/{percentile(one_tab.read_delays, 99):.1f} ms, "
        f"{fan_out.label} {percentile(fan_out.read_delays, 50):.1f}/{percentile(fan_out.read_delays, 99):.1f} ms, "
        f"p99 ratio {read_ratio:.2f}"
    )
    print(
        f"\np99 {fan_out.label} / one tab: {ratio:.2f} (target <= {TARGET_P99_RATIO}) "
        f"{verdict(not math.isnan(ratio) and ratio <= TARGET_P99_RATIO)}"
    )
    print(f"dropped (tab-turns missing a token or the turn's end): {dropped} (target 0) {verdict(dropped == 0)}")
    problems = warmup_errors + [f"[one tab] {e}" for e in one_tab.dropped] + [f"[{fan_out.label}] {e}" for e in fan_out.dropped]
    if problems:
        print("\nerrors (count x message):")
        for message, count in Counter(problems).most_common(8):
            print(f"  {count:4d} x {message[:200]}")
    print_server_tracebacks(res)
    print(f"\nlogs (daphne, clients, model server): {res.dir}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tabs", type=int, default=50, help="open tabs of the shared thread (default 50)")
    parser.add_argument("--people", type=int, default=10, help="people the thread is shared among, owner included (default 10)")
    parser.add_argument("--turns", type=int, default=10, help="turns per phase, the phases alternating (default 10)")
    parser.add_argument("--latency", type=float, default=0.3, help="model latency before each reply, s")
    parser.add_argument("--tokens", type=int, default=60, help="answer tokens per turn")
    parser.add_argument("--rate", type=float, default=30.0, help="answer tokens per second")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up turns per server")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds between opening the tabs and sending")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before a tab's turn counts as dropped")
    parser.add_argument("--redis-db", type=int, default=14, help="Redis database the servers use (flushed)")
    args = parser.parse_args()
    if not 2 <= args.people <= args.tabs:
        parser.error("--people must be at least 2 and at most --tabs")
    if args.turns < 1:
        parser.error("--turns must be at least 1")

    raise_open_file_limit()  # inherited by every child
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    res = Resources()
    print(f"HAICO fan-out bench; logs in {res.dir}", flush=True)
    try:
        one_tab, fan_out, warmup_errors = measure(args, res, ensure_services())
        print_report(one_tab, fan_out, warmup_errors, args, res)
    except BenchError as exc:
        print(f"fan-out bench failed: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("\ninterrupted; stopping servers and dropping the bench database", file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        res.cleanup()
    if warmup_errors or one_tab.dropped or fan_out.dropped:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

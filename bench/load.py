"""Concurrency bench: N agent turns at once through the real app, against a bare floor, in one run.

Everything talks to one scripted OpenAI-compatible model server
(bench/model_server.py, asyncio, its own process): `--latency` seconds before
each reply's first chunk; a turn is one `set_objective` tool call, then an
answer of `--tokens` tokens at `--rate` tokens/s, each token carrying its emit
time. The ideal turn is 2 x latency + tokens / rate (2.6 s with the defaults).

For each N (`--n`), in the same run:

- floor: bench/floor.py, one process with no Django: a bare `create_agent`
  around the real `ChatOpenAI`, HAICO's sixteen tools with no-op bodies and
  its system prompt as a static string (bench/floor_spec.py: every model
  request carries what the app's does, so the ratio is what the server adds
  around the model), AsyncSqliteSaver; N concurrent `astream` runs released
  at the same moment. --floor-1tool adds "floor-1tool": one no-op tool, no
  prompt.
  floor x2 (only when pg2 is asked for): two such processes, N/2 turns each,
  released together: the fair floor for two server processes.
- each config (`--configs`), real servers as subprocesses on a fresh
  migrated database (one per config, dropped at the end):
    sqlite1  one daphne, SQLite, in-memory channel layer (the default setup)
    pg1      one daphne, PostgreSQL + Redis channel layer
    pg2      two daphnes on two ports sharing the PostgreSQL database and Redis,
             clients spread across them
    pg2proxy pg2 behind nginx (deploy/nginx.conf rendered for the two ports,
             Debian's nginx, plain HTTP, daphne with --proxy-headers): every
             client connects to nginx, which spreads the sockets (least_conn);
             the cold and warm single turns go to each server directly
  The servers are started afresh for every N (so peak RSS and the first-turn
  figure belong to that N). Right after start, one single turn per server on
  a fresh thread ("cold"); then a warm-up round (`--warmup` turns per
  server); one single turn per server again ("warm"); then the measured
  round: N WebSocket clients (bench/ws_clients.py: one asyncio task per
  client in one client process, see its docstring for why not OS threads),
  each logged in as its own user on its own thread, all connected first,
  then all sending {"message", "model"} at the same moment, through the real
  consumer, turn runner and ChatOpenAI.

Figures per row:
  wall s       common send moment -> last turn end
  x floor      wall / the floor's wall at the same N (pg2: the two-process floor)
  x floor1     pg2, pg2proxy and floor x2 only: wall / the one-process floor (pg2 target <= 0.75)
  x ideal      wall / ideal turn
  tok p50/p99  model emit -> first seen by the client (browser socket, or the
               floor's stream consumer), over every token of every turn, ms
  errors       failed turns (error marker, refusal notice, socket closed,
               timeout, missing tokens, connect failure)
  RSS MB       peak RSS (VmHWM) of the server process(es), summed; the floor's own
  CPU s/turn   utime+stime of the server process(es) over the measured round / N
  model req    requests the model server got during the round (2 per turn; more = SDK retries)
Also: cold - warm first-turn time per server start (target <= 200 ms), the
answer's tokens per WebSocket frame (the median over a config's turns), and the
targets of the issue checked at N = 200 (or the largest N run).

Run: .venv/bin/python -m bench.load [--n 1,50,200] [--latency 0.3] [--tokens 60] [--rate 30]
                                     [--configs sqlite1,pg1,pg2] [--repeats 1]
PostgreSQL and Redis come from HAICO_TEST_POSTGRES_URL / HAICO_TEST_REDIS_URL,
else from scripts/test_services.sh start. Every server's, floor's and
client's output is kept in a log directory printed at the start and the end.
With --repeats > 1 the figures are medians over repeats (errors summed, RSS
the maximum). The machine is noisy; compare the ratios, not the seconds.

Limits, on purpose or not:
- The "browser" is a socket reader: delays end when a frame arrives, not
  when htmx has swapped it into the page.
- A turn that never ends counts at the timeout, so the wall of such a row
  is the timeout (marked *), not a speed.
- The bench's own processes share the machine: the model server and the
  client process use a little CPU during a round (printed), and the floor
  process does its own token bookkeeping on its loop.
- At small N, p99 is a handful of tokens and is dominated by gen-2 GC
  pauses (tens of ms in either process); the floor's wall varies by ~20 %
  between runs on a 2-core box. Use --repeats for decisions.
- The floor keeps LangGraph's default durability and an SQLite saver in
  every config (the app uses durability "sync" and, on PostgreSQL, the
  Postgres saver); the servers run with production settings (DEBUG=False)
  unless --debug.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from bench.common import cpu_seconds, peak_rss_mb, percentile, raise_open_file_limit
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
MESSAGE = "Help me plan a short essay."
MODEL = "bench-model"


@dataclass(frozen=True)
class Config:
    name: str
    database: str  # "sqlite" | "postgres"
    processes: int
    proxy: bool = False  # nginx in front (deploy/nginx.conf)

    @property
    def redis(self) -> bool:
        return self.database == "postgres"


CONFIGS = {
    "sqlite1": Config("sqlite1", "sqlite", 1),
    "pg1": Config("pg1", "postgres", 1),
    "pg2": Config("pg2", "postgres", 2),
    "pg2proxy": Config("pg2proxy", "postgres", 2, proxy=True),
}
TWO_PROCESS = ("pg2", "pg2proxy", "floor x2")


class BenchError(Exception):
    """A configuration could not be run; reported as a row, the bench goes on."""


# --- what must be cleaned up, whatever happens ------------------------------------------


class Resources:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="haico-load-"))
        self.procs: list[subprocess.Popen] = []
        self.pg_databases: list[tuple[str, str]] = []  # (server url, database name)
        self.files: list[Path] = []
        self.rounds = 0  # client rounds so far; each keeps its result (clients-<n>.json)

    def spawn(self, argv, *, log: Path, **kwargs) -> subprocess.Popen:
        handle = open(log, "ab")
        kwargs.setdefault("stdout", handle)
        # Own session: a Ctrl+C in the terminal reaches only this process,
        # which then stops the children in order (servers get SIGTERM and shut
        # down their turns; nothing is left behind).
        proc = subprocess.Popen(argv, cwd=ROOT, stderr=handle, start_new_session=True, **kwargs)
        handle.close()
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen, grace: float = 15.0) -> bool:
        """SIGTERM, then SIGKILL after `grace` s. True if it had to be killed."""
        killed = False
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                killed = True
        for stream in (proc.stdin, proc.stdout):
            if stream:
                stream.close()
        if proc in self.procs:
            self.procs.remove(proc)
        return killed

    def cleanup(self) -> None:
        for proc in reversed(list(self.procs)):
            try:
                self.stop(proc, grace=5.0)
            except Exception as exc:  # keep cleaning
                print(f"  cleanup: could not stop pid {proc.pid}: {exc}", file=sys.stderr)
        for base, name in self.pg_databases:
            try:
                drop_postgres_database(base, name)
            except Exception as exc:
                print(f"  cleanup: could not drop database {name}: {exc}", file=sys.stderr)
        self.pg_databases.clear()
        for path in self.files:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        self.files.clear()


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


# --- environment, services, databases ----------------------------------------------------


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with _OPENER.open(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def child_env(**extra: str) -> dict:
    """The environment minus anything that would point a child at another
    model, database or tracer; plus `extra`."""
    dropped = ("OPENAI_", "LANGSMITH_", "LANGCHAIN_", "HAICO_")
    names = {"DATABASE_URL", "REDIS_URL", "DEBUG", "ALLOWED_HOSTS", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped) and k not in names}
    env.update(PYTHONUNBUFFERED="1", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost", PYTHONPATH=str(ROOT))
    env.update(extra)
    return env


def ensure_services() -> tuple[str, str]:
    """(PostgreSQL server URL, Redis URL), starting them with scripts/test_services.sh if needed."""
    pg = os.environ.get("HAICO_TEST_POSTGRES_URL", "")
    redis_url = os.environ.get("HAICO_TEST_REDIS_URL", "")
    if not (pg and redis_url):
        out = subprocess.run(
            ["bash", str(ROOT / "scripts/test_services.sh"), "start"], capture_output=True, text=True, timeout=300, check=False
        )
        exported = dict(
            line[len("export ") :].split("=", 1) for line in out.stdout.splitlines() if line.startswith("export ") and "=" in line
        )
        pg = pg or exported.get("HAICO_TEST_POSTGRES_URL", "")
        redis_url = redis_url or exported.get("HAICO_TEST_REDIS_URL", "")
        if not (pg and redis_url):
            raise BenchError(f"PostgreSQL/Redis not available (scripts/test_services.sh said: {out.stderr.strip()[-300:]})")
    return pg, redis_url


def create_postgres_database(base: str, res: Resources) -> str:
    import psycopg
    from psycopg import sql

    name = f"haico_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    res.pg_databases.append((base, name))
    return base.rsplit("/", 1)[0] + "/" + name


def drop_postgres_database(base: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def redis_db_url(base: str, db: int) -> str:
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}/{db}"


def flush_redis(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


# --- the model server ------------------------------------------------------------------


MODEL_SERVER_PID: list[int] = []


def model_cpu() -> float:
    return cpu_seconds(MODEL_SERVER_PID[0]) if MODEL_SERVER_PID else math.nan


def start_model_server(args, res: Resources) -> int:
    log = res.dir / "model_server.log"
    proc = res.spawn(
        [
            PYTHON,
            "-m",
            "bench.model_server",
            "--port",
            "0",
            "--latency",
            str(args.latency),
            "--tokens",
            str(args.tokens),
            "--rate",
            str(args.rate),
        ],
        log=log,
        stdout=subprocess.PIPE,
        env=child_env(),
    )
    MODEL_SERVER_PID[:] = [proc.pid]
    line = proc.stdout.readline().decode()
    if not line.startswith("LISTENING "):
        raise SystemExit(f"model server did not start; see {log}")
    return int(line.split()[1])


def model_requests(port: int) -> int:
    return json.loads(http_get(f"http://127.0.0.1:{port}/stats")[1])["requests"]


# --- rows ------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    n: int
    wall: float = math.nan
    p50: float = math.nan
    p99: float = math.nan
    errors: list = field(default_factory=list)
    rss: float = math.nan
    cpu_per_turn: float = math.nan
    model_requests: int | None = None
    cold_warm_ms: list = field(default_factory=list)  # one per server start
    # CPU seconds spent elsewhere on the machine during the round (contention)
    model_cpu: float = math.nan
    client_cpu: float = math.nan
    # Median over the turns of the answer's tokens per WebSocket frame that
    # brought any: 1 when each token went out as it came, more when tokens
    # waited somewhere and went out together (the floor's are not counted).
    tokens_per_frame: float = math.nan


def row_from(label: str, n: int, t0: float, t_end: float, delays, errors, rss, cpu, requests) -> Row:
    return Row(
        label=label,
        n=n,
        wall=t_end - t0,
        p50=percentile(delays, 50),
        p99=percentile(delays, 99),
        errors=list(errors),
        rss=rss,
        cpu_per_turn=cpu / n if n else math.nan,
        model_requests=requests,
    )


# --- the floor -------------------------------------------------------------------------


def floor_spec(res: Resources) -> Path:
    """HAICO's tool list and fresh-thread system prompt (bench/floor_spec.py), for the floor."""
    path = res.dir / "floor-spec.json"
    with open(path, "wb") as out, open(res.dir / "floor-spec.log", "ab") as log:
        done = subprocess.run(
            [PYTHON, "-m", "bench.floor_spec"],
            cwd=ROOT,
            stdout=out,
            stderr=log,
            timeout=120,
            check=False,
            env=child_env(DATABASE_URL=f"sqlite:///{res.dir / 'spec.sqlite3'}", DJANGO_SETTINGS_MODULE="haico_site.settings"),
        )
    if done.returncode:
        raise BenchError(f"bench.floor_spec failed; see {res.dir}/floor-spec.log")
    return path


def run_floor(args, res: Resources, model_port: int, n: int, processes: int, tag: str, spec: Path | None) -> Row:
    label = ("floor" if processes == 1 else f"floor x{processes}") if spec else "floor-1tool"
    parts = [n // processes + (1 if i < n % processes else 0) for i in range(processes)]
    procs = []
    try:
        for i, part in enumerate(p for p in parts if p):
            procs.append(
                res.spawn(
                    [
                        PYTHON,
                        "-m",
                        "bench.floor",
                        "--base-url",
                        f"http://127.0.0.1:{model_port}/v1",
                        "--n",
                        str(part),
                        "--warmup",
                        str(args.warmup),
                        "--tokens",
                        str(args.tokens),
                        "--timeout",
                        str(args.timeout),
                        *(["--spec", str(spec)] if spec else []),
                    ],
                    log=res.dir / f"{tag}-floor{processes}-p{i}.log",
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env=child_env(),
                    text=True,
                )
            )
        for proc in procs:
            # Anything a library prints before READY is skipped; EOF means it died.
            if not any(line.strip() == "READY" for line in proc.stdout):
                raise BenchError(f"{label} process did not get ready; see {res.dir}/{tag}-floor{processes}-p*.log")
        requests_before, model_cpu_before = model_requests(model_port), model_cpu()
        for proc in procs:  # release them together
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            for line in proc.stdout:
                if line.startswith("RESULT "):
                    results.append(json.loads(line[len("RESULT ") :]))
                    break
            proc.wait(60)
        if len(results) != len(procs):
            raise BenchError(f"{label} process died; see {res.dir}/{tag}-floor{processes}-p*.log")
        row = row_from(
            label,
            n,
            min(r["t0"] for r in results),
            max(r["t_end"] for r in results),
            [d for r in results for d in r["delays"]],
            [e for r in results for e in r["errors"]],
            sum(r["rss_mb"] for r in results),
            sum(r["cpu"] for r in results),
            model_requests(model_port) - requests_before,
        )
        row.model_cpu = model_cpu() - model_cpu_before
        return row
    finally:
        for proc in procs:
            res.stop(proc)


# --- the app ---------------------------------------------------------------------------


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    log: Path


def prepare_database(config: Config, args, res: Resources, services) -> str:
    """A fresh, migrated database for `config`; returns its DATABASE_URL."""
    if config.database == "sqlite":
        path = res.dir / f"{config.name}.sqlite3"
        res.files.append(path)
        url = f"sqlite:///{path}"
    else:
        url = create_postgres_database(services[0], res)
    log = res.dir / f"{config.name}-migrate.log"
    with open(log, "wb") as handle:
        done = subprocess.run(
            [PYTHON, "manage.py", "migrate", "--noinput"],
            cwd=ROOT,
            env=child_env(DATABASE_URL=url),
            stdout=handle,
            stderr=subprocess.STDOUT,
            timeout=600,
            check=False,
        )
    if done.returncode:
        raise BenchError(f"migrate failed for {config.name}; see {log}")
    return url


# Production settings unless --debug: DEBUG=True makes Django keep every
# query's SQL (CursorDebugWrapper), which a self-hosted server does not pay.
SERVER_DEBUG = False


def server_env(config: Config, database_url: str, model_port: int, redis_url: str | None) -> dict:
    env = child_env(
        DATABASE_URL=database_url,
        OPENAI_BASE_URL=f"http://127.0.0.1:{model_port}/v1",
        OPENAI_API_KEY="bench",
        HAICO_MODEL=MODEL,
        DEBUG="True" if SERVER_DEBUG else "False",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_SETTINGS_MODULE="haico_site.settings",
    )
    if not SERVER_DEBUG:
        # Plain HTTP on loopback: no HTTPS redirect; a throwaway key; the
        # static files collected once for the run (collect_static).
        env.update(SECRET_KEY=os.urandom(32).hex(), SECURE_SSL_REDIRECT="False", STATIC_ROOT=str(STATIC_ROOT[0]))
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


STATIC_ROOT: list[Path] = []


def collect_static(res: Resources) -> None:
    """Production pages name hashed static files: collect them once, as deploy/start.sh does."""
    STATIC_ROOT[:] = [res.dir / "static"]
    log = res.dir / "collectstatic.log"
    with open(log, "wb") as handle:
        done = subprocess.run(
            [PYTHON, "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=ROOT,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=child_env(
                DEBUG="False",
                SECRET_KEY=os.urandom(32).hex(),
                STATIC_ROOT=str(STATIC_ROOT[0]),
                DATABASE_URL=f"sqlite:///{res.dir / 'static.sqlite3'}",
            ),
            timeout=600,
            check=False,
        )
    if done.returncode:
        raise SystemExit(f"collectstatic failed; see {log}")


def run_seed(env: dict, argv: list[str], res: Resources) -> str:
    """bench/seed.py with `argv` on the database of the servers' `env`; what it printed."""
    log = res.dir / "seed.log"
    with open(log, "ab") as handle:
        done = subprocess.run(
            [PYTHON, "-m", "bench.seed", *argv],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=handle,
            timeout=600,
            check=False,
        )
    if done.returncode:
        raise BenchError(f"bench.seed {' '.join(argv[:2])} failed; see {log}")
    return done.stdout.decode()


def seed_clients(env: dict, count: int, prefix: str, res: Resources) -> list[dict]:
    """`count` people, each with a thread and a session: [{"username", "thread", "cookie"}]."""
    return json.loads(run_seed(env, ["--count", str(count), "--prefix", prefix], res))


def start_servers(config: Config, env: dict, res: Resources, tag: str) -> list[Server]:
    servers = []
    for i in range(config.processes):
        port = free_port()
        log = res.dir / f"{tag}-daphne{i}.log"
        # The way README serves it: daphne on uvloop (haico_site/serve.py);
        # behind the proxy as deploy/start.sh starts it.
        proxy_headers = ["--proxy-headers"] if config.proxy else []
        proc = res.spawn([PYTHON, "-m", "haico_site.serve", *proxy_headers, "-b", "127.0.0.1", "-p", str(port)], log=log, env=env)
        servers.append(Server(proc, port, log))
    deadline = time.monotonic() + 120
    for server in servers:
        while True:
            if server.proc.poll() is not None:
                raise BenchError(f"daphne exited with {server.proc.returncode}; see {server.log}")
            try:
                if http_get(f"http://127.0.0.1:{server.port}/accounts/login/", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise BenchError(f"daphne did not answer within 120 s; see {server.log}")
            time.sleep(0.1)
    return servers


def client_round(
    servers: list[Server], clients: list[dict], args, res: Resources, front: int | None = None, settle: float = 0.0
) -> dict:
    """One round through bench/ws_clients.py; client i goes to server i mod P,
    or every client to the proxy on port `front`. A client with "listens_only"
    is another tab of a thread that one client sends on; `settle`: seconds of
    frames thrown away after connecting (see bench/ws_clients.py)."""

    def port(i: int) -> int:
        return front if front is not None else servers[i % len(servers)].port

    spec = {
        "clients": [
            {
                "url": f"ws://127.0.0.1:{port(i)}/ws/threads/{c['thread']}/",
                "origin": f"http://127.0.0.1:{port(i)}",
                "cookie": c["cookie"],
                "listens_only": c.get("listens_only", False),
            }
            for i, c in enumerate(clients)
        ],
        "message": MESSAGE,
        "model": MODEL,
        "timeout": args.timeout,
        "expected_tokens": args.tokens,
        "server_pids": [s.proc.pid for s in servers],
        "connect_concurrency": 32,
        "settle": settle,
    }
    res.rounds += 1
    result = res.dir / f"clients-{res.rounds}.json"
    # The result goes to a file, not a pipe: a 50-tab round's result (a few
    # hundred kilobytes) twice came through a pipe cut at 128 or 160 KiB, the
    # client having exited 0 with nothing on stderr.
    with open(res.dir / "clients.log", "ab") as handle, open(result, "wb") as out:
        done = subprocess.run(
            [PYTHON, "-m", "bench.ws_clients"],
            cwd=ROOT,
            env=child_env(),
            input=json.dumps(spec).encode(),
            stdout=out,
            stderr=handle,
            timeout=args.timeout + 300,
            check=False,
        )
    if done.returncode:
        raise BenchError(f"the client process failed; see {res.dir / 'clients.log'}")
    try:
        return json.loads(result.read_bytes())
    except ValueError as exc:
        raise BenchError(f"the client process's result is not JSON ({exc}); see {result}") from None


def single_turn_ms(server: Server, client: dict, args, res: Resources) -> tuple[float, str | None]:
    result = client_round([server], [client], args, res)
    turn = result["turns"][0] if result["turns"] else {"seconds": math.nan, "error": (result["errors"] or ["?"])[0]}
    return turn["seconds"] * 1000, turn["error"]


def run_config(config: Config, args, res: Resources, model_port: int, database_url: str, redis_url, n: int, tag: str) -> Row:
    env = server_env(config, database_url, model_port, redis_url)
    per_server = 1 + args.warmup + 1  # cold, warm-up, warm
    clients = seed_clients(env, config.processes * per_server + n, tag, res)
    if redis_url:
        flush_redis(redis_url)
    servers = start_servers(config, env, res, tag)
    row = Row(config.name, n)
    proxy = None
    try:
        front = None
        if config.proxy:
            from tests.support.nginx import Nginx

            proxy = Nginx(res.dir / f"{tag}-nginx", upstreams=[f"127.0.0.1:{s.port}" for s in servers])
            proxy.start()
            front = proxy.port
        colds = [single_turn_ms(server, clients.pop(), args, res) for server in servers]
        warmup = client_round(servers, [clients.pop() for _ in range(config.processes * args.warmup)], args, res, front)
        warms = [single_turn_ms(server, clients.pop(), args, res) for server in servers]
        requests_before, model_cpu_before = model_requests(model_port), model_cpu()
        measured = client_round(servers, [clients.pop() for _ in range(n)], args, res, front)
        requests, round_model_cpu = model_requests(model_port) - requests_before, model_cpu() - model_cpu_before
        rss = sum(peak_rss_mb(server.proc.pid) for server in servers)
        row = row_from(
            config.name,
            n,
            measured["t0"],
            measured["t_end"],
            measured["delays"],
            measured["errors"],
            rss,
            measured["server_cpu"],
            requests,
        )
        row.model_cpu, row.client_cpu = round_model_cpu, measured["client_cpu"]
        row.tokens_per_frame = statistics.median(
            [len(turn["delays"]) / turn["token_frames"] for turn in measured["turns"] if turn["token_frames"]] or [math.nan]
        )
        for (cold, cold_error), (warm, warm_error) in zip(colds, warms):
            row.cold_warm_ms.append(cold - warm)
            for phase, error in (("cold turn", cold_error), ("warm turn", warm_error)):
                if error:
                    row.errors.append(f"[{phase}] {error}")
        row.errors += [f"[warm-up] {e}" for e in warmup["errors"]]
    finally:
        if proxy is not None:
            proxy.stop()
        for server in servers:
            if res.stop(server.proc):
                row.errors.append(f"[shutdown] daphne pid {server.proc.pid} ignored SIGTERM for 15 s (killed)")
    return row


# --- report ----------------------------------------------------------------------------


def aggregate(samples: list[Row]) -> Row:
    """Medians over repeats (errors summed, RSS the maximum)."""
    if len(samples) == 1:
        return samples[0]

    def median(values):
        values = [v for v in values if v is not None and not math.isnan(v)]
        return statistics.median(values) if values else math.nan

    first = samples[0]
    return Row(
        label=first.label,
        n=first.n,
        wall=median(s.wall for s in samples),
        p50=median(s.p50 for s in samples),
        p99=median(s.p99 for s in samples),
        errors=[e for s in samples for e in s.errors],
        rss=max((s.rss for s in samples), default=math.nan),
        cpu_per_turn=median(s.cpu_per_turn for s in samples),
        model_requests=sum(s.model_requests or 0 for s in samples),
        cold_warm_ms=[v for s in samples for v in s.cold_warm_ms],
        model_cpu=median(s.model_cpu for s in samples),
        client_cpu=median(s.client_cpu for s in samples),
        tokens_per_frame=median(s.tokens_per_frame for s in samples),
    )


def fmt(value, spec: str, width: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-".rjust(width)
    return format(value, spec).rjust(width)


def measured_errors(row: Row) -> list[str]:
    """Errors of the measured round (not the cold/warm/warm-up/shutdown extras)."""
    return [e for e in row.errors if not e.startswith("[")]


def print_server_tracebacks(res: Resources) -> None:
    """Each daphne log with tracebacks: how many, and the commonest exception lines."""
    tracebacks = []
    for log in sorted(res.dir.glob("*-daphne*.log")):
        text = log.read_text(errors="replace")
        count = text.count("Traceback (most recent call last)")
        if count:
            # The last line of each traceback, e.g. "redis.exceptions.TimeoutError: ..."
            kinds = Counter(
                re.findall(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b[^\n]{0,120})$", text, re.MULTILINE)
            )
            top = "; ".join(f"{c} x {k}" for k, c in kinds.most_common(3))
            tracebacks.append(f"  {log.name}: {count} tracebacks; {top}")
    if tracebacks:
        print("\nserver logs with tracebacks (exception lines, most common first):")
        print("\n".join(tracebacks))


def print_report(rows: dict, args, ns: list[int], configs: list[Config], res: Resources) -> None:
    ideal = 2 * args.latency + args.tokens / args.rate
    print()
    print(
        f"HAICO load bench: {args.latency:.2f} s model latency per call, {args.tokens} answer tokens at "
        f"{args.rate:g}/s -> ideal turn {ideal:.2f} s; warm; repeats {args.repeats}; {os.cpu_count()} cores"
    )
    header = (
        f"{'config':10s} {'N':>4s} {'wall s':>7s} {'x floor':>7s} {'x floor1':>8s} {'x ideal':>7s} "
        f"{'tok p50 ms':>10s} {'tok p99 ms':>10s} {'errors':>6s} {'RSS MB':>7s} {'CPU s/turn':>10s} {'model req':>9s}"
    )
    print(header)
    print("-" * len(header))
    any_timeouts = False
    for n in ns:
        floor1 = rows.get(("floor", n))
        floor2 = rows.get(("floor x2", n))
        labels = ["floor", "floor-1tool"] + (["floor x2"] if floor2 else []) + [c.name for c in configs]
        for label in labels:
            row = rows.get((label, n))
            if row is None:
                continue
            reference = floor2 if label in TWO_PROCESS and floor2 else floor1
            x_floor = row.wall / reference.wall if reference else math.nan
            x_floor1 = row.wall / floor1.wall if floor1 and label in TWO_PROCESS else None
            timed_out = any(e.startswith("no turn end") for e in row.errors)
            any_timeouts = any_timeouts or timed_out
            wall = fmt(row.wall, ".2f", 6) + ("*" if timed_out else " ")
            print(
                f"{label:10s} {n:4d} {wall} {fmt(x_floor, '.2f', 7)} {fmt(x_floor1, '.2f', 8)} "
                f"{fmt(row.wall / ideal, '.2f', 7)} {fmt(row.p50, '.1f', 10)} {fmt(row.p99, '.1f', 10)} "
                f"{len(measured_errors(row)):6d} {fmt(row.rss, '.0f', 7)} {fmt(row.cpu_per_turn, '.3f', 10)} "
                f"{fmt(row.model_requests, 'd', 9)}"
            )
        print()
    if any_timeouts:
        print(f"* some turns never ended: the wall is bounded by the {args.timeout:.0f} s turn timeout\n")

    print("cold - warm first turn after server start (ms; one value per server start, N = " + ", ".join(map(str, ns)) + "):")
    for config in configs:
        values = [v for n in ns if (config.name, n) in rows for v in rows[(config.name, n)].cold_warm_ms]
        shown = ", ".join(f"{v:+.0f}" for v in values) or "-"
        worst = f"worst {max(values):+.0f} ms" if values else "no figure"
        print(f"  {config.name:8s} {shown}   ({worst}; target <= +200 ms)")

    print("\nanswer tokens per WebSocket frame (median over the turns; 1: each token sent as it came):")
    for (label, n), row in rows.items():
        if not math.isnan(row.tokens_per_frame):
            print(f"  {label:9s} N={n:<4d} {row.tokens_per_frame:5.1f}")

    print("\nother CPU on the machine during each measured round (s; the floor's client work is in its own figure):")
    for (label, n), row in rows.items():
        if not math.isnan(row.wall):
            print(
                f"  {label:9s} N={n:<4d} model server {fmt(row.model_cpu, '.2f', 6)}   ws clients {fmt(row.client_cpu, '.2f', 6)}"
                f"   (server {fmt(row.cpu_per_turn * n if n else math.nan, '.2f', 6)} over {row.wall:.2f} s wall)"
            )

    problems = [(key, row) for key, row in rows.items() if row.errors]
    if problems:
        print("\nerrors (count x message, a few distinct ones per row; [phase] = outside the measured round):")
        for (label, n), row in problems:
            counts = Counter(re.sub(r"\d+ of \d+ tokens", "k of n tokens", e) for e in row.errors)
            print(f"  {label} N={n}: {len(row.errors)} in all")
            for message, count in counts.most_common(4):
                print(f"    {count:4d} x {message[:200]}")

    print_server_tracebacks(res)

    target_n = 200 if 200 in ns else max(ns)
    print(f"\ntargets at N = {target_n}{'' if target_n == 200 else ' (the issue states them at N = 200)'}:")
    floor1 = rows.get(("floor", target_n))

    def verdict(ok: bool) -> str:
        return "OK" if ok else "OVER"

    for config in configs:
        row = rows.get((config.name, target_n))
        if row is None or floor1 is None or math.isnan(row.wall):
            print(f"  {config.name}: no figure")
            continue
        if config.processes == 1:
            ratio, p99_ratio = row.wall / floor1.wall, row.p99 / floor1.p99
            print(
                f"  {config.name}: wall {ratio:.2f} x floor (<= 1.2) {verdict(ratio <= 1.2)};"
                f"  token p99 {p99_ratio:.2f} x floor's (<= 1.2) {verdict(p99_ratio <= 1.2)}"
            )
        else:
            ratio = row.wall / floor1.wall
            print(f"  {config.name}: wall {ratio:.2f} x one-process floor (<= 0.75) {verdict(ratio <= 0.75)}")
        errors = len(measured_errors(row))
        print(
            f"  {' ' * len(config.name)}  errors {errors} (0) {verdict(errors == 0)};"
            f"  cold - warm {max(row.cold_warm_ms, default=math.nan):+.0f} ms (<= 200)"
            f" {verdict(max(row.cold_warm_ms, default=math.inf) <= 200)}"
        )
    direct, proxied = rows.get(("pg2", target_n)), rows.get(("pg2proxy", target_n))
    if direct and proxied and not math.isnan(direct.wall) and not math.isnan(proxied.wall):
        added = proxied.wall / direct.wall - 1
        errors = len(measured_errors(proxied))
        print(
            f"  proxy: pg2proxy wall {added:+.1%} against pg2 (< +5 %) {verdict(added < 0.05)};"
            f"  errors {errors} (0) {verdict(errors == 0)};"
            f"  token p99 {proxied.p99:.1f} ms against {direct.p99:.1f} ms"
        )
    print(f"\nlogs (daphne, floor, clients, model server): {res.dir}")


# --- main ------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="1,50,200", help="concurrent turns, comma-separated (default 1,50,200)")
    parser.add_argument("--latency", type=float, default=0.3, help="model latency before each reply, s")
    parser.add_argument("--tokens", type=int, default=60, help="answer tokens per turn")
    parser.add_argument("--rate", type=float, default=30.0, help="answer tokens per second")
    parser.add_argument("--configs", default="sqlite1,pg1,pg2", help="of sqlite1, pg1, pg2, pg2proxy (default the first three)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds per (config, N); medians are reported")
    parser.add_argument("--warmup", type=int, default=8, help="warm-up turns per server (and per floor process)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a turn counts as failed")
    parser.add_argument("--redis-db", type=int, default=15, help="Redis database the pg configs use (flushed)")
    parser.add_argument("--debug", action="store_true", help="run the servers with DEBUG=True (development settings)")
    parser.add_argument(
        "--floor-1tool",
        action="store_true",
        help="also run the floor with one tool and no prompt (the floor before HAICO's tools and prompt were given to it)",
    )
    args = parser.parse_args()
    global SERVER_DEBUG
    SERVER_DEBUG = args.debug
    ns = [int(x) for x in args.n.split(",") if x.strip()]
    try:
        configs = [CONFIGS[name.strip()] for name in args.configs.split(",") if name.strip()]
    except KeyError as exc:
        parser.error(f"unknown config {exc}; choose from {', '.join(CONFIGS)}")

    raise_open_file_limit()  # inherited by every child
    signal.signal(signal.SIGTERM, _raise_interrupt)
    # Even when started in the background (where SIGINT starts out ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    res = Resources()
    print(f"HAICO load bench; logs in {res.dir}", flush=True)
    rows: dict[tuple[str, int], list[Row]] = {}

    def add(row: Row) -> None:
        rows.setdefault((row.label, row.n), []).append(row)
        print(
            f"  {row.label:9s} N={row.n:<4d} wall {row.wall:6.2f} s  p99 {row.p99:7.1f} ms  errors {len(measured_errors(row))}",
            flush=True,
        )

    try:
        services = None
        if any(c.database == "postgres" for c in configs):
            try:
                services = ensure_services()
            except BenchError as exc:
                print(f"  skipping PostgreSQL configs: {exc}")
                for c in [c for c in configs if c.database == "postgres"]:
                    for n in ns:
                        rows[(c.name, n)] = [Row(c.name, n, errors=[f"[bench] {exc}"])]
                configs = [c for c in configs if c.database != "postgres"]
        if not SERVER_DEBUG:
            collect_static(res)
        if any(c.proxy for c in configs):
            from tests.support import nginx

            if reason := nginx.available():
                raise SystemExit(f"pg2proxy needs nginx: {reason}")
        model_port = start_model_server(args, res)
        print(f"  model server on 127.0.0.1:{model_port}", flush=True)
        spec = floor_spec(res)
        databases: dict[str, str] = {}
        for repeat in range(args.repeats):
            for n in ns:
                add(run_floor(args, res, model_port, n, 1, f"n{n}-r{repeat}", spec))
                if args.floor_1tool:
                    add(run_floor(args, res, model_port, n, 1, f"n{n}-r{repeat}-1tool", None))
                if any(c.processes == 2 for c in configs):
                    add(run_floor(args, res, model_port, n, 2, f"n{n}-r{repeat}", spec))
                for config in configs:
                    tag = f"{config.name}-n{n}-r{repeat}"
                    try:
                        if config.name not in databases:
                            databases[config.name] = prepare_database(config, args, res, services)
                        redis_url = redis_db_url(services[1], args.redis_db) if config.redis else None
                        add(run_config(config, args, res, model_port, databases[config.name], redis_url, n, tag))
                    except BenchError as exc:
                        add(Row(config.name, n, errors=[f"bench: {exc}"]))
        print_report({key: aggregate(samples) for key, samples in rows.items()}, args, ns, configs, res)
    except KeyboardInterrupt:
        print("\ninterrupted; stopping servers and dropping the bench databases", file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        res.cleanup()


if __name__ == "__main__":
    main()

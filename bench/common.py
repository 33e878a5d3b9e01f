"""Small helpers shared by the bench's processes (no Django or LangChain at
import time).

- TOKEN_RE finds the bench model's tokens (" tk<µs since the epoch>") in any
  text: a raw model chunk or an HTML frame, escaped or rendered as markdown.
- Process figures read from /proc (Linux): CPU seconds and peak RSS.
- set_up_django: the environment of a bench that runs Django in its own
  process (production settings, a fresh SQLite database, no Redis).
"""

from __future__ import annotations

import math
import os
import re
import resource
import tempfile
from pathlib import Path

# "tk" + the emit time in microseconds (16 digits until the year 2286).
TOKEN_RE = re.compile(r"\btk(\d{13,})\b")

_TICKS = os.sysconf("SC_CLK_TCK")


def record_tokens(text: str, seen: dict[str, float], now: float) -> None:
    """Remember the first receipt time of every token in `text`."""
    for match in TOKEN_RE.finditer(text):
        seen.setdefault(match.group(1), now)


def token_delays_ms(seen: dict[str, float]) -> list[float]:
    """receipt - emit per token, in milliseconds."""
    return [(received - int(stamp) / 1_000_000) * 1000 for stamp, received in seen.items()]


def cpu_seconds(pid: int | str = "self") -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        # The command name (field 2) may contain spaces; fields after ")" are fixed.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def peak_rss_mb(pid: int | str = "self") -> float:
    """VmHWM (peak resident set size) of a process, in MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def raise_open_file_limit() -> None:
    """N sockets per side at N = 200+: lift the soft descriptor limit to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def set_up_django(*, prefix: str, database_file: str, database_url: str | None = None, static_root: bool = False) -> Path:
    """Production settings (DEBUG off) in this process, on `database_url` or a
    fresh SQLite `database_file` in a new temporary folder, with the in-memory
    channel layer (no Redis); then django.setup(). Returns the folder."""
    bench_dir = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ.update(
        DATABASE_URL=database_url or f"sqlite:///{bench_dir / database_file}",
        DJANGO_SETTINGS_MODULE="haico_site.settings",
        DEBUG="False",
        SECRET_KEY=os.urandom(32).hex(),
        SECURE_SSL_REDIRECT="False",
        HAICO_LOG_LEVEL="WARNING",
    )
    if static_root:
        os.environ["STATIC_ROOT"] = str(bench_dir / "static")
    os.environ.pop("REDIS_URL", None)

    import django

    django.setup()
    return bench_dir


def as_if_every_thread_were_open() -> None:
    """Render every write's live patches, as for a thread a tab shows. The
    live layer renders none for a thread no page shows (docs/adr/0169), and
    the benches that call this measure a write with its push. Where the push
    goes is unchanged: no page is connected, so to no one."""
    from conversations.live import publisher

    publisher.anyone_listens = lambda thread_id: True  # type: ignore[method-assign]

"""Private PostgreSQL and Redis servers a test may stop and start at will
(the shared ones on 5432 / 6379 must never be stopped).

`PrivateRedis(tmp)`: a redis-server on a free loopback port, no persistence.
`PrivatePostgres()`: a cluster made with initdb in a directory of its
own, run by the `postgres` account (as root) or by the current one, on a
free loopback port, with a password superuser `haico`;
`PrivatePostgres(copy_of=data)` starts from a copy of another one's files
(`.data`, shut down cleanly with `.shut_down()`) instead, and
`migrated_private_postgres()` is such a copy of a cluster migrated once per
machine. Both have `.url`,
`.start()`, `.stop()` and `.close()` (stop for good, files removed);
`available()` says why one cannot run here (None when it can).
"""

from __future__ import annotations

import fcntl
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.ports import free_port


def _wait_for_port(port: int, *, up: bool, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                answered = True
        except OSError:
            answered = False
        if answered == up:
            return
        time.sleep(0.1)
    raise RuntimeError(f"port {port} did not go {'up' if up else 'down'} within {timeout} s")


class PrivateRedis:
    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    @staticmethod
    def available() -> str | None:
        return None if shutil.which("redis-server") else "redis-server is not installed"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_port(self.port, up=True)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None
        _wait_for_port(self.port, up=False)

    def close(self) -> None:
        self.stop()


def _postgres_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


class PrivatePostgres:
    def __init__(self, *, copy_of: Path | None = None):
        # Not under pytest's tmp_path: its parents are private to root, and
        # the cluster runs as `postgres`.
        self.workdir = Path(tempfile.mkdtemp(prefix="haico-private-pg-"))
        self.data = self.workdir / "data"
        self.port = free_port()
        self.url = f"postgres://haico:haico@127.0.0.1:{self.port}/postgres"
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        os.chmod(self.workdir, 0o755)
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.workdir, account.pw_uid, account.pw_gid)
        if copy_of is not None:
            # A cluster's files, copied while it is shut down, are that
            # cluster: its databases, roles and password (docs/adr/0096).
            self._run("cp", "-a", str(copy_of), str(self.data))
            return
        (self.workdir / "pw").write_text("haico\n")
        os.chmod(self.workdir / "pw", 0o644)
        self._run(
            _postgres_bin("initdb"),
            "-D",
            str(self.data),
            "-U",
            "haico",
            "--pwfile",
            str(self.workdir / "pw"),
            "-A",
            "scram-sha-256",
            "--no-sync",
        )

    @staticmethod
    def available() -> str | None:
        if _postgres_bin("initdb") is None or _postgres_bin("pg_ctl") is None:
            return "PostgreSQL's initdb / pg_ctl are not installed"
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                return "no postgres account to run a private cluster as"
        return None

    @staticmethod
    def version() -> str:
        """The version of the PostgreSQL that makes and runs the clusters."""
        out = subprocess.run([str(_postgres_bin("initdb")), "--version"], capture_output=True, text=True, check=True).stdout
        return out.split()[2]

    def _run(self, *argv: str) -> None:
        done = subprocess.run([*self._as, *argv], capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> None:
        self._run(
            _postgres_bin("pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.workdir / "log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {self.port} -k {self.workdir} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        )
        _wait_for_port(self.port, up=True)

    def stop(self) -> None:
        # Immediate: as a crash or a lost network would look to the app.
        self._run(_postgres_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        _wait_for_port(self.port, up=False)

    def shut_down(self) -> None:
        """Stopped cleanly, its files whole for a copy to start from."""
        self._run(_postgres_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        _wait_for_port(self.port, up=False)

    def close(self) -> None:
        try:
            self.stop()
        except RuntimeError:
            pass  # not running
        shutil.rmtree(self.workdir, ignore_errors=True)


BASE_DIR = Path(__file__).resolve().parents[2]
MIGRATED_CLUSTERS = Path(tempfile.gettempdir())
MIGRATED_CLUSTER_PREFIX = "haico-private-pg-migrated-"
# A template cluster no test of any run has copied for this long is one of
# older migrations (another worktree's, an earlier run's): removed.
MIGRATED_CLUSTER_IDLE_SECONDS = 3600


def _migrate_private_cluster(name: str) -> None:
    """Make the migrated cluster `name` under MIGRATED_CLUSTERS: initdb,
    migrate, shut down cleanly, then renamed into place whole."""
    postgres = PrivatePostgres()
    try:
        postgres.start()
        env = {**os.environ, "DATABASE_URL": postgres.url}
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"], cwd=BASE_DIR, env=env, check=True, capture_output=True
        )
        postgres.shut_down()
    except BaseException:
        postgres.close()
        raise
    postgres.workdir.rename(MIGRATED_CLUSTERS / name)


def migrated_private_postgres() -> PrivatePostgres:
    """A private cluster (not started) whose `postgres` database is already
    migrated to the code's migrations: a copy of a template cluster that the
    first caller on the machine makes (named after the migration files and
    PostgreSQL's version), so a test spends neither initdb nor a migrate
    (docs/adr/0096). What a migrate from empty leaves is exactly what the
    copy holds; the test of migrating an empty database has its own."""
    from tests.support.migrations import migrations_digest

    name = f"{MIGRATED_CLUSTER_PREFIX}{migrations_digest()}-{PrivatePostgres.version()}"
    with open(MIGRATED_CLUSTERS / f"{MIGRATED_CLUSTER_PREFIX}lock", "w") as lock:
        # Made, copied and removed under one lock: no copy of a partial or
        # half-removed cluster.
        fcntl.flock(lock, fcntl.LOCK_EX)
        for stale in MIGRATED_CLUSTERS.glob(f"{MIGRATED_CLUSTER_PREFIX}*"):
            if stale.is_dir() and stale.name != name and time.time() - stale.stat().st_mtime > MIGRATED_CLUSTER_IDLE_SECONDS:
                shutil.rmtree(stale, ignore_errors=True)
        if not (MIGRATED_CLUSTERS / name).exists():
            _migrate_private_cluster(name)
        os.utime(MIGRATED_CLUSTERS / name)
        return PrivatePostgres(copy_of=MIGRATED_CLUSTERS / name / "data")

"""`manage.py backup PATH`: a consistent copy of the database while the
server runs (docs/adr/0060).

SQLite: the sqlite3 backup API copies the whole file in one step under a
read lock, so the copy is one moment of the database even while turns
write (WAL mode lets them go on meanwhile); the LangGraph checkpointer's
tables live in the same file (agent.checkpointer), so the agent's history
comes along. The copy is checked (`PRAGMA integrity_check`) before the
command says it is done.

PostgreSQL: `pg_dump --format=custom` of the database (the checkpointer's
tables are in it too), which is consistent by itself; restore it with
pg_restore (README "Backups").
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connections


class Command(BaseCommand):
    help = "Copy the database (with the agent's checkpoints) to PATH while the server runs."

    def add_arguments(self, parser):
        parser.add_argument("path", help="the backup file to write (it must not exist yet)")

    def handle(self, *args, path: str, **options):
        target = Path(path).expanduser().resolve()
        if target.exists():
            raise CommandError(f"{target} exists already; a backup never overwrites a file.")
        if not target.parent.is_dir():
            raise CommandError(f"{target.parent} is not a directory.")
        settings_dict = connections["default"].settings_dict
        vendor = connections["default"].vendor
        if vendor == "sqlite":
            self._sqlite(Path(settings_dict["NAME"]), target)
        elif vendor == "postgresql":
            self._postgres(settings_dict, target)
        else:
            raise CommandError(f"no backup for a {vendor} database; use its own tools.")
        size = target.stat().st_size
        self.stdout.write(f"Backed up the database to {target} ({size:,} bytes).")

    def _sqlite(self, source_path: Path, target: Path) -> None:
        if not source_path.exists():
            raise CommandError(f"the database {source_path} does not exist.")
        source = sqlite3.connect(f"file:{source_path}?mode=ro", uri=True, timeout=30)
        partial = target.with_name(target.name + ".partial")
        copy = sqlite3.connect(partial)
        try:
            source.backup(copy)  # all pages in one step: one consistent moment
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            result = copy.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            copy.close()
            source.close()
        if result != "ok":
            partial.unlink(missing_ok=True)
            raise CommandError(f"the copy failed its integrity check ({result}); nothing was written.")
        partial.rename(target)

    def _postgres(self, settings_dict: dict, target: Path) -> None:
        pg_dump = shutil.which("pg_dump")
        if pg_dump is None:
            raise CommandError("pg_dump is not installed (Debian: apt-get install postgresql-client).")
        env = {**os.environ}
        for key, variable in (("HOST", "PGHOST"), ("PORT", "PGPORT"), ("USER", "PGUSER"), ("PASSWORD", "PGPASSWORD")):
            if settings_dict.get(key):
                env[variable] = str(settings_dict[key])
        partial = target.with_name(target.name + ".partial")
        done = subprocess.run(
            [pg_dump, "--format=custom", "--no-owner", "--file", str(partial), "--dbname", settings_dict["NAME"]],
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            partial.unlink(missing_ok=True)
            raise CommandError(f"pg_dump failed: {done.stderr.strip()}")
        partial.rename(target)

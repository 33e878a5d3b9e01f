"""The LangGraph checkpointer: one saver per server process.

SQLite by default (the saver shares Django's database file and adds its own
`checkpoints` / `writes` tables); Postgres when Django's database is Postgres
(an `AsyncPostgresSaver` over a psycopg connection pool, in the same database).

Savers are bound to the event loop that first used them (their connections
belong to it), so the saver is created lazily inside the running loop —
under daphne that is the server's loop, where turns run — and re-created if
a different loop asks (each test has its own loop; tests close it in a
fixture).

Closing matters: an open aiosqlite connection keeps a non-daemon thread alive,
so the interpreter would wait for it forever after the server stops (daphne
then looks like it ignores SIGTERM). Daphne runs on Twisted, which has a
"before shutdown" trigger but no ASGI lifespan; `install_server_shutdown_hook`
uses that trigger to run the registered shutdown callbacks (the turn runner
stops its turns) and then close the saver. atexit would be too late: Python
joins non-daemon threads before it runs atexit handlers.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable

from django.db import connections
from langgraph.checkpoint.base import BaseCheckpointSaver

from workspace.db import ended_by_server

logger = logging.getLogger("haico.agent.checkpointer")

# SQLite busy timeout for the saver's own connection, in seconds (Django's
# connection waits 5 s; the saver writes once per agent step and can wait longer).
SQLITE_TIMEOUT_SECONDS = 15.0
POSTGRES_POOL_MAX_SIZE = 10


class _Open:
    """The saver of one event loop and how to close it."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.ready: asyncio.Future = loop.create_future()
        self.saver: BaseCheckpointSaver | None = None
        self.close: Callable[[], Awaitable[None]] | None = None


_current: _Open | None = None
_shutdown_callbacks: list[Callable[[], Awaitable[None]]] = []
_hook_installed = False


def database_vendor() -> str:
    return connections["default"].vendor


def sqlite_path() -> str:
    """The SQLite file Django uses right now (the test database under pytest)."""
    return str(connections["default"].settings_dict["NAME"])


def postgres_conninfo() -> str:
    from psycopg.conninfo import make_conninfo

    cfg = connections["default"].settings_dict
    params = {
        "dbname": cfg.get("NAME"),
        "user": cfg.get("USER"),
        "password": cfg.get("PASSWORD"),
        "host": cfg.get("HOST"),
        "port": str(cfg.get("PORT") or ""),
    }
    return make_conninfo(**{k: v for k, v in params.items() if v})


async def _open_sqlite(opened: _Open) -> None:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    conn = aiosqlite.connect(sqlite_path(), timeout=SQLITE_TIMEOUT_SECONDS)
    # Belt and braces for servers without a shutdown hook: a daemon worker
    # thread can never keep the process alive (SQLite in WAL mode is safe to
    # abandon). The hook below still closes it properly under daphne.
    worker = getattr(conn, "_thread", None)
    if worker is not None and not worker.is_alive():
        worker.daemon = True
    await conn
    # Same pragmas as Django's connection (settings.SQLITE_OPTIONS): WAL with
    # synchronous=NORMAL skips an fsync per checkpoint write, and the busy
    # timeout lets it wait for the ORM's short write transactions.
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute("PRAGMA synchronous=NORMAL")
    await conn.execute(f"PRAGMA busy_timeout={int(SQLITE_TIMEOUT_SECONDS * 1000)}")
    saver = AsyncSqliteSaver(conn)
    await saver.setup()

    async def close() -> None:
        await conn.close()

    opened.saver, opened.close = saver, close


def postgres_pool(conninfo: str):
    """The saver's connection pool (not opened yet).

    Every connection is checked before it is lent: after the server closed
    them (a restart, a failover, pg_terminate_backend) the pool would
    otherwise hand out dead connections, and the turns using them would
    fail one after another (docs/adr/0044). The check is a round trip only
    where the connection's socket shows a sign of its end (docs/adr/0170).
    One that fails its check was closed with all the others: they are all
    checked at once, so the pool's next try (after its one-second back-off)
    finds a live one instead of the next dead one, with a longer back-off
    each time."""
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    pool: AsyncConnectionPool | None = None

    async def check(conn) -> None:
        if not ended_by_server(conn):
            return
        try:
            await AsyncConnectionPool.check_connection(conn)
        except Exception:
            logger.warning("a checkpointer connection was closed by the database; checking the others")
            try:
                await pool.check()  # type: ignore[union-attr]  # made before any connection is lent
            except Exception:
                logger.warning("could not check the checkpointer's other connections", exc_info=True)
            raise

    pool = AsyncConnectionPool(
        conninfo=conninfo,
        max_size=POSTGRES_POOL_MAX_SIZE,
        open=False,
        check=check,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    )
    return pool


async def _open_postgres(opened: _Open) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    pool = postgres_pool(postgres_conninfo())
    await pool.open()
    try:
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
    except BaseException:
        await pool.close()
        raise
    opened.saver, opened.close = saver, pool.close


async def _open(opened: _Open) -> None:
    try:
        if database_vendor() == "postgresql":
            await _open_postgres(opened)
        else:
            await _open_sqlite(opened)
    except BaseException as exc:
        if isinstance(exc, asyncio.CancelledError):
            opened.ready.cancel()
        else:
            opened.ready.set_exception(exc)
            opened.ready.exception()  # mark it retrieved: the caller re-raises it
        raise
    opened.ready.set_result(opened.saver)
    install_server_shutdown_hook()


async def get_checkpointer() -> BaseCheckpointSaver:
    """The process's saver, opened on first use in the running loop."""
    global _current
    loop = asyncio.get_running_loop()
    opened = _current
    if (
        opened is None
        or opened.loop is not loop
        or (opened.ready.done() and (opened.ready.cancelled() or opened.ready.exception()))
    ):
        if opened is not None and opened.loop is not loop:
            # The loop that owned it is gone (a finished test); it cannot be
            # awaited from here, so it is only dropped.
            logger.warning("checkpointer of a previous event loop was never closed")
        opened = _current = _Open(loop)
        try:
            await _open(opened)
        except BaseException:
            if _current is opened:
                _current = None
            raise
        return opened.saver  # type: ignore[return-value]  # set by _open
    return await asyncio.shield(opened.ready)


async def close_checkpointer() -> None:
    """Close the saver if this loop opened one. Safe to call twice."""
    global _current
    opened = _current
    if opened is None or opened.loop is not asyncio.get_running_loop():
        return
    _current = None
    if opened.ready.done() and not opened.ready.cancelled() and not opened.ready.exception() and opened.close is not None:
        await opened.close()
    elif not opened.ready.done():
        opened.ready.cancel()


def on_shutdown(callback: Callable[[], Awaitable[None]]) -> None:
    """Run `callback` (in the server loop) before the saver is closed at shutdown."""
    if callback not in _shutdown_callbacks:
        _shutdown_callbacks.append(callback)


async def shutdown() -> None:
    """Stop what depends on the saver, then close it."""
    for callback in list(_shutdown_callbacks):
        try:
            await callback()
        except Exception:
            logger.exception("shutdown callback %r failed", callback)
    await close_checkpointer()


def install_server_shutdown_hook() -> None:
    """Under daphne (Twisted's asyncio reactor), close everything when the
    reactor shuts down (SIGTERM, SIGINT, Ctrl+C). Elsewhere nothing to do:
    tests close explicitly and the SQLite worker thread is a daemon."""
    global _hook_installed
    if _hook_installed or "twisted.internet.reactor" not in sys.modules:
        return
    from twisted.internet import asyncioreactor, defer, reactor

    if not isinstance(reactor, asyncioreactor.AsyncioSelectorReactor):
        return
    _hook_installed = True

    def before_shutdown():
        return defer.Deferred.fromFuture(asyncio.ensure_future(shutdown(), loop=reactor._asyncioEventloop))

    # The interface declares no self, so mypy reads "before" as it.
    reactor.addSystemEventTrigger("before", "shutdown", before_shutdown)  # type: ignore[arg-type]

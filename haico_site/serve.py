"""Serve HAICO with daphne on uvloop: `python -m haico_site.serve -b 127.0.0.1 -p 8000`.

Takes daphne's own options; the application defaults to haico_site.asgi.
uvloop (libuv's event loop) runs the same asyncio code with a much cheaper
selector, callback queue and sockets: under 200 concurrent turns the event
loop's own machinery was a fifth of the server's time (docs/adr/0009). The
policy must be in place before daphne imports its server module, which
creates the loop it runs Twisted on. A frame goes to its socket at once
when nothing is queued before it (haico_site.socket_writes, docs/adr/0097).
"""

import asyncio
import os
import socket
import sys

from haico_site.socket_writes import write_at_once


def name_instance(name: str) -> None:
    """This server's stable name (settings.HAICO_INSTANCE), unless the
    environment gives one: a restart under the same name releases the turns
    its predecessor was running at once (conversations.turns.slot)."""
    os.environ.setdefault("HAICO_INSTANCE", f"{socket.gethostname()}/{name}")


def instance_from_daphne_args(argv: list[str]) -> str:
    """The address daphne will listen on, from its own options."""

    def option(*names):
        for i, arg in enumerate(argv):
            for name in names:
                if arg == name and i + 1 < len(argv):
                    return argv[i + 1]
                if arg.startswith(name + "="):
                    return arg.split("=", 1)[1]
        return None

    unix = option("-u", "--unix-socket")
    if unix:
        return f"daphne@unix:{unix}"
    fd = option("--fd")
    if fd:
        return f"daphne@fd:{fd}"
    endpoint = option("-e", "--endpoint")
    if endpoint:
        return f"daphne@{endpoint}"
    return f"daphne@{option('-b', '--bind') or '127.0.0.1'}:{option('-p', '--port') or '8000'}"


def use_uvloop() -> None:
    """uvloop where it is installed; elsewhere (it has no wheels for Windows
    or PyPy, requirements.txt) asyncio's own loop runs the same code, slower."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def warm_up_when_running() -> None:
    """Once the server runs: release the turns a killed predecessor left
    running, and load everything the first turn would, so it is as quick as
    the rest (conversations.turns.registry.warm_up)."""
    from twisted.internet import reactor

    def start() -> None:
        from conversations.turns import registry

        registry.warm_up()

    # Startup triggers fire before the asyncio loop runs; a delayed call
    # runs inside it, where the warm-up's task belongs.
    reactor.callWhenRunning(reactor.callLater, 0, start)


def log_through_logging() -> None:
    """daphne's access log and what nothing caught become log records, in
    the format of every other line (haico_site.logs, docs/adr/0060)."""
    import daphne.cli

    from haico_site.logs import AccessLog, log_uncaught_exceptions

    daphne.cli.AccessLogGenerator = AccessLog
    log_uncaught_exceptions()


def main(argv: list[str]) -> None:
    use_uvloop()
    name_instance(instance_from_daphne_args(argv))
    log_through_logging()
    write_at_once()
    from daphne.cli import CommandLineInterface

    warm_up_when_running()  # daphne.cli has installed the asyncio reactor by now

    if not any(arg and not arg.startswith("-") and ":" in arg for arg in argv):
        argv = [*argv, "haico_site.asgi:application"]
    CommandLineInterface().run(argv)


if __name__ == "__main__":
    main(sys.argv[1:])

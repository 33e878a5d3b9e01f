"""Serve HAICO with daphne on uvloop: `python -m haico_site.serve -b 127.0.0.1 -p 8000`.

Takes daphne's own options; the application defaults to haico_site.asgi.
uvloop (libuv's event loop) runs the same asyncio code with a much cheaper
selector, callback queue and sockets: under 200 concurrent turns the event
loop's own machinery was a fifth of the server's time (docs/adr/0009). The
policy must be in place before daphne imports its server module, which
creates the loop it runs Twisted on.
"""

import asyncio
import sys


def use_uvloop() -> None:
    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def warm_up_when_running() -> None:
    """Once the server runs: everything the first turn would load, so it is
    as quick as the rest (conversations.turns.registry.warm_up)."""
    from twisted.internet import reactor

    def start() -> None:
        from conversations.turns import registry

        registry.warm_up()

    # Startup triggers fire before the asyncio loop runs; a delayed call
    # runs inside it, where the warm-up's task belongs.
    reactor.callWhenRunning(reactor.callLater, 0, start)


def main(argv: list[str]) -> None:
    use_uvloop()
    from daphne.cli import CommandLineInterface

    warm_up_when_running()  # daphne.cli has installed the asyncio reactor by now

    if not any(arg and not arg.startswith("-") and ":" in arg for arg in argv):
        argv = [*argv, "haico_site.asgi:application"]
    CommandLineInterface().run(argv)


if __name__ == "__main__":
    main(sys.argv[1:])

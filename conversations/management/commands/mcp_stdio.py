"""`manage.py mcp_stdio`: the MCP server over stdin/stdout, for desktop
agents that start it as a subprocess (docs/adr/0026). It acts as the person
whose access token is in HAICO_TOKEN (or --token), exactly as /mcp does:
the token is checked on every request, so revoking it (or deactivating its
person) stops a running session at once."""

import asyncio
import os

from django.core.management.base import BaseCommand, CommandError

from conversations.mcp_transport import serve_stdio
from conversations.tokens import REQUIRED, TokenRefused, token_check


class Command(BaseCommand):
    help = "Serve the workspace tools over MCP on stdin/stdout, as the owner of an access token."

    def add_arguments(self, parser):
        parser.add_argument("--token", help="An access token (default: the HAICO_TOKEN environment variable).")

    def handle(self, *args, **options):
        secret = options.get("token") or os.environ.get("HAICO_TOKEN", "")
        try:
            token_check(secret)
        except TokenRefused as exc:
            # stderr: stdout belongs to the protocol.
            hint = " Set HAICO_TOKEN or pass --token." if exc.message == REQUIRED else ""
            raise CommandError(exc.message + hint) from None
        asyncio.run(serve_stdio(secret))  # checked again on every request

"""`manage.py mcp_stdio`: the MCP server over stdin/stdout, for desktop
agents that start it as a subprocess (docs/adr/0026). It acts as the person
whose access token is in HAICO_TOKEN (or --token), exactly as /mcp does:
the token is checked on every request, so revoking it (or deactivating its
person) stops a running session at once."""

import asyncio
import os

from django.core.management.base import BaseCommand, CommandError

from conversations.mcp_transport import serve_stdio
from conversations.tokens import token_for_secret


class Command(BaseCommand):
    help = "Serve the workspace tools over MCP on stdin/stdout, as the owner of an access token."

    def add_arguments(self, parser):
        parser.add_argument("--token", help="An access token (default: the HAICO_TOKEN environment variable).")

    def handle(self, *args, **options):
        secret = options.get("token") or os.environ.get("HAICO_TOKEN", "")
        token = token_for_secret(secret) if secret else None
        if token is None:
            # stderr: stdout belongs to the protocol.
            raise CommandError("A valid access token is required: set HAICO_TOKEN or pass --token (make one at /accounts/tokens/).")
        asyncio.run(serve_stdio(secret))  # checked again on every request

"""Django's HTTP requests under the ASGI server, in one hop to a thread.

Django's own ASGI handler runs its middleware in async mode: every
middleware that is sync only (ours, which read the session, the person
and the database), every sync `process_view` (six of them) and
`process_response`, and the view itself is called through its own
`sync_to_async`, and the chain goes back to the event loop between them.
A workspace request made 14 such hops, each a wake of a thread and then of
the loop (about 0.2 ms on a two-core machine, more under load, and each
one more callback for the loop that streams every running turn).

This handler loads the middleware as a WSGI server would (sync, the chain
the test suite's client drives) and calls it in one `sync_to_async` per
request, in the request's thread-sensitive context, so the middlewares
and the view run in one thread on one database connection as before.
What stays async: reading the body, sending the response (streamed ones
too), `request_started`/closing, an async view (healthz, run on the loop
through `async_to_sync`) and ServeStatic, which is async only: in
production it costs a request two more hops. Five hops a request in all
(docs/adr/0172).
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler


class OneHopASGIHandler(ASGIHandler):
    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)

    async def get_response_async(self, request):
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)

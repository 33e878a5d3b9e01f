"""How long the page of a big workspace takes to render, and how big it is.

The workspace of the page target (docs/adr/0072): 100 preferences, 300
plan steps, a 30 000-character document and 20 artifacts, and the chat of
the turn that built them: 120 tool calls, ten to a model reply, each with
its sentence in the reasoning trace (run through the real turn with a
scripted model). The floor is the
same request to a page that renders nothing but the site's base template
(the login page), so the ratio says what the workspace adds; the absolute
figures are what the target (<= 30 ms, <= 200 KB) is about. Production settings (DEBUG off).

Those figures come through Django's test client, as a WSGI server would
call the app. The server (daphne) calls it through ASGI: the last lines
take the page and a small request (the document's preview of a one-line
document) that way, through haico_site.asgi's handler and, in the same
run, through Django's own ASGI handler, which crossed between the event
loop and a thread 14 times a request where ours does 5 (docs/adr/0172).

Run: .venv/bin/python -m bench.page_render [--repeats 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import set_up_django  # noqa: E402

set_up_django(prefix="haico-page-", database_file="page.sqlite3", static_root=True)

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from conversations.services import thread_create  # noqa: E402
from tests.support.workspaces import big_workspace  # noqa: E402
from workspace.services import document as document_services  # noqa: E402


def chat_that_built_it(thread, *, calls: int = 120, per_reply: int = 10) -> None:
    """One turn whose model made `calls` tool calls, `per_reply` to a reply,
    then answered: the trace the page shows under the person's message."""
    from agent import checkpointer as checkpointers
    from agent.builder import AgentProvider
    from conversations.turns import registry
    from tests.support.fake_model import Reply, ScriptedChatModel, tool_call

    script = [
        Reply(
            text="",
            tool_calls=[
                tool_call("toggle_todos", f"Ticking off step {i + 1}, which the draft now covers.", indices=[i + 1])
                for i in range(start, min(start + per_reply, calls))
            ],
        )
        for start in range(0, calls, per_reply)
    ]
    script.append(Reply(text="The plan, the preferences, the draft and the charts are ready; tell me what to change."))
    model = ScriptedChatModel(script=script)
    registry.agents = AgentProvider(model_factory=lambda _model: model)

    async def run() -> None:
        try:
            await registry.start_turn(
                thread=thread, user_message="Build the report's workspace: plan, preferences, draft and charts."
            )
            await registry.wait_for_turn(thread.pk, timeout=600)
        finally:
            await checkpointers.close_checkpointer()

    asyncio.run(run())


def timed(client, url, repeats) -> tuple[float, int]:
    client.get(url)  # compile templates, warm caches
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        response = client.get(url)
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.status_code
    return statistics.median(samples), len(response.content)


async def timed_asgi(app, cookies: dict, url: str, repeats: int) -> float:
    """Median ms of `url` through the ASGI application `app`, as the server calls it."""
    import httpx2

    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1", cookies=cookies) as client:
        assert (await client.get(url)).status_code == 200  # compile templates, warm caches
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            response = await client.get(url)
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200, response.status_code
    return statistics.median(samples)


def through_asgi(client, thread, small_thread, repeats: int) -> None:
    """The page and a small request through both ASGI handlers, alternating."""
    from django.conf import settings
    from django.core.handlers.asgi import ASGIHandler

    from haico_site.asgi import django_asgi_app

    cookies = {settings.SESSION_COOKIE_NAME: client.cookies[settings.SESSION_COOKIE_NAME].value}
    urls = {"page": f"/threads/{thread.pk}/workspace/", "small": f"/threads/{small_thread.pk}/workspace/document/preview/"}
    handlers = {"ours": django_asgi_app, "django": ASGIHandler()}
    runs = {(name, kind): [] for name in handlers for kind in urls}
    for _ in range(3):  # alternating, so both see the same machine
        for name, app in handlers.items():
            for kind, url in urls.items():
                runs[name, kind].append(asyncio.run(timed_asgi(app, cookies, url, repeats)))
    ms = {key: statistics.median(values) for key, values in runs.items()}
    print(
        f"  through ASGI     {ms['ours', 'page']:6.1f} ms   the page, as the server calls it "
        f"(Django's own ASGI handler: {ms['django', 'page']:.1f} ms)"
    )
    print(
        f"  a small request  {ms['ours', 'small']:6.1f} ms   through ASGI; Django's own ASGI handler "
        f"{ms['django', 'small']:.1f} ms -> x {ms['ours', 'small'] / ms['django', 'small']:.2f}"
    )


def main(repeats: int) -> None:
    call_command("migrate", verbosity=0)
    # Production pages name the hashed static files (docs/adr/0058).
    call_command("collectstatic", interactive=False, verbosity=0)
    owner = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    thread = big_workspace(owner)
    chat_that_built_it(thread)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(owner)
    page_ms, page_bytes = timed(client, f"/threads/{thread.pk}/workspace/", repeats)
    preview_ms, preview_bytes = timed(client, f"/threads/{thread.pk}/workspace/document/preview/", repeats)
    floor_ms, _ = timed(Client(HTTP_HOST="127.0.0.1"), "/accounts/login/", repeats)
    print(
        f"HAICO page render bench ({repeats} repeats, medians; 100 preferences, 300 steps, 30 000-char document, "
        "20 artifacts, a turn of 120 tool calls)"
    )
    print(
        f"  workspace page   {page_ms:6.1f} ms  {page_bytes / 1024:6.1f} KB   (targets <= 30 ms, <= 200 KB; "
        f"{200 * 1024 - page_bytes} bytes to spare)"
        f"  {'OK' if page_ms <= 30 and page_bytes <= 200 * 1024 else 'OVER'}"
    )
    print(f"  its preview      {preview_ms:6.1f} ms  {preview_bytes / 1024:6.1f} KB   (a second request, after the page)")
    print(f"  floor (log-in)   {floor_ms:6.1f} ms                -> page x floor {page_ms / floor_ms:.1f}")
    small_thread = thread_create(owner=owner, title="A small one")
    document_services.document_save(thread=small_thread, title="Note", content="One line.", base_version=0)
    through_asgi(client, thread, small_thread, repeats)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    main(parser.parse_args().repeats)

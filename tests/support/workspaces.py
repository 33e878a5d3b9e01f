"""Workspaces at the size the page target is about (docs/adr/0072), built
through the services: the page test and bench/page_render.py build the same one."""

from conversations.services import thread_create
from workspace.services import artifacts as artifact_services
from workspace.services import document as document_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services


def big_workspace(owner, *, title: str = "Big workspace"):
    """A new thread of `owner` with 300 plan steps (four levels of outline),
    100 preferences (a third hard), a 30 000-character document and 20 charts."""
    thread = thread_create(owner=owner, title=title)
    plan_services.todos_add_outline(
        thread=thread,
        steps=[{"text": f"Step {i} of a long plan with some words", "depth": [0, 1, 2, 1][i % 4]} for i in range(300)],
    )
    for i in range(100):
        preference_services.preference_add(
            thread=thread,
            title=f"Preference number {i}",
            subtitle="Some detail about it",
            kind="hard" if i % 3 == 0 else "soft",
            respect_lock=False,
        )
    body = ("## Section\n\nLorem ipsum dolor sit amet, **consectetur** adipiscing elit. " * 400)[:30000]
    document_services.document_save(thread=thread, title="Report", content=body)
    for i in range(20):
        artifact_services.artifact_create(
            thread=thread,
            artifact_type="bar_chart",
            title=f"Chart {i}",
            payload={"title": f"Chart {i}", "data": [{"name": "Q1", "value": 1}, {"name": "Q2", "value": 2}]},
            turn_index=0,
        )
    return thread

"""The page of one thread: every panel and the chat, for its owner only, and
light however big the workspace grows."""

import pytest

from conversations.services import thread_create
from workspace.services import artifacts as artifact_services
from workspace.services import document as document_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db


def _page(client, thread):
    return client.get(f"/threads/{thread.pk}/workspace/")


def test_the_owner_gets_every_region(owner_client, thread):
    html = _page(owner_client, thread).content.decode()
    for region in ("Preferences", "Planning", "Document", "Chat", "Trajectory"):
        assert f'aria-label="{region}"' in html
    assert 'id="live-inbox"' in html and f"/threads/{thread.pk}/workspace/live/" in html


def test_another_person_gets_404(other_client, thread):
    assert _page(other_client, thread).status_code == 404


def test_anonymous_visitor_is_sent_to_log_in(client, thread):
    response = _page(client, thread)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_big_workspace_page_stays_under_200_kb_with_no_per_row_forms(owner_client, owner):
    thread = thread_create(owner=owner, title="Big")
    plan_services.todos_add_outline(
        thread=thread, steps=[{"text": f"Step {i} of a long plan with some words", "depth": [0, 1, 2, 1][i % 4]} for i in range(300)]
    )
    for i in range(100):
        preference_services.preference_add(
            thread=thread, title=f"Preference number {i}", subtitle="Some detail about it",
            kind="hard" if i % 3 == 0 else "soft", respect_lock=False,
        )
    body = ("## Section\n\nLorem ipsum dolor sit amet, **consectetur** adipiscing elit. " * 400)[:30000]
    document_services.document_save(thread=thread, title="Report", content=body)
    for i in range(20):
        artifact_services.artifact_create(
            thread=thread, artifact_type="bar_chart", title=f"Chart {i}",
            payload={"title": f"Chart {i}", "data": [{"name": "Q1", "value": 1}]}, turn_index=0,
        )

    response = _page(owner_client, thread)

    html = response.content.decode()
    assert response.status_code == 200
    assert len(response.content) <= 200 * 1024, len(response.content)
    assert html.count('class="step') >= 300 and html.count('class="pref pref-') == 100
    steps = html.split('id="plan-steps"', 1)[1].split("</ol>", 1)[0]
    assert "<form" not in steps and "hx-post" not in steps
    # A long document's preview comes by its own request after the page.
    assert f"/threads/{thread.pk}/workspace/document/preview/" in html

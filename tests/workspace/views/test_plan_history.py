"""The plan's history over HTTP (docs/adr/0090): the owner's and an
editor's plan edits are recorded as theirs; their answer (and the push)
carries only a marker of the new entries, read from the database by
nothing, which an open history follows by asking for the entries after
the newest it shows (docs/adr/0092); anyone who may see the thread (a
viewer too) reads the history a page at a time; a viewer's write is
refused with nothing recorded; another person gets 404."""

import re

import pytest

from tests.support.patches import only_patch
from tests.support.web import HTMX, answered_as_missing, ws_url
from workspace import panels
from workspace.events import Change
from workspace.models import PlanChange, ThreadMember, Todo
from workspace.selectors import PLAN_HISTORY_PAGE
from workspace.services import plan as plan_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def bea(django_user_model):
    return django_user_model.objects.create_user(username="bea", first_name="Bea", last_name="Stone", password="pw-123456")


@pytest.fixture
def editor_client(client, thread, bea):
    ThreadMember.objects.create(thread=thread, user=bea, role=ThreadMember.Role.EDITOR)
    client.force_login(bea)
    return client


@pytest.fixture
def viewer_client(client, thread, other_user):
    ThreadMember.objects.create(thread=thread, user=other_user, role=ThreadMember.Role.VIEWER)
    client.force_login(other_user)
    return client


def _recorded(thread):
    return list(PlanChange.objects.filter(thread=thread).order_by("id").values_list("summary", "author", "person_username"))


def _entries(html):
    """The history's entries as (what, who) texts, in the order shown."""
    items = re.findall(r'<li class="history-entry plan-change" id="plan-change-\d+">(.*?)</li>', html, flags=re.DOTALL)
    return [
        (
            re.search(r'class="history-text">(.*?)</span>', item, flags=re.DOTALL).group(1),
            re.search(r'class="history-who muted">(.*?) · <time', item, flags=re.DOTALL).group(1),
        )
        for item in items
    ]


def _marker(html):
    """The push's marker of new history entries: (oldest id, newest id)."""
    patch = only_patch(html, "plan-history")
    assert patch.rows == []  # no entry: the page asks for them
    return int(patch.attrs["data-oldest"]), int(patch.attrs["data-newest"])


def test_the_owners_edit_is_recorded_as_theirs_and_answered_with_a_marker_the_open_history_follows(owner_client, thread):
    response = owner_client.post(ws_url(thread, "plan/add/"), {"text": "Collect sources"}, **HTMX)

    assert response.status_code == 200
    assert _recorded(thread) == [("Added “Collect sources”", "person", "owner")]
    entry = PlanChange.objects.get(thread=thread)
    assert _marker(response.content.decode()) == (entry.pk, entry.pk)
    newer = owner_client.get(ws_url(thread, f"plan/history/?after={entry.pk - 1}"), **HTMX).content.decode()
    [(what, who)] = _entries(newer)
    assert what == "Added “Collect sources”"
    assert who == "By owner before the first turn"


def test_an_editors_edits_are_recorded_by_their_name(editor_client, thread):
    step = plan_services.todo_add(thread=thread, text="Draft")

    editor_client.post(ws_url(thread, f"plan/{step.pk}/done/"), {"done": "true"}, **HTMX)
    editor_client.post(ws_url(thread, f"plan/{step.pk}/edit/"), {"text": "Draft the intro"}, **HTMX)
    response = editor_client.post(ws_url(thread, f"plan/{step.pk}/delete/"), **HTMX)

    assert _recorded(thread)[1:] == [
        ("Ticked “Draft”", "person", "bea"),
        ("Renamed “Draft” to “Draft the intro”", "person", "bea"),
        ("Removed “Draft the intro”", "person", "bea"),
    ]
    # Shown by the one name everyone sees for them: the full name.
    oldest, _newest = _marker(response.content.decode())
    newer = editor_client.get(ws_url(thread, f"plan/history/?after={oldest - 1}"), **HTMX).content.decode()
    assert _entries(newer) == [("Removed “Draft the intro”", "By Bea Stone before the first turn")]


def test_a_viewers_plan_write_is_refused_and_records_nothing(viewer_client, thread):
    step = plan_services.todo_add(thread=thread, text="Draft")
    before = _recorded(thread)

    added = viewer_client.post(ws_url(thread, "plan/add/"), {"text": "Sneaked in"})
    ticked = viewer_client.post(ws_url(thread, f"plan/{step.pk}/done/"), {"done": "true"})

    assert added.status_code == 403 and ticked.status_code == 403
    assert "You can view this thread but not change it" in added.content.decode()
    assert _recorded(thread) == before
    assert list(Todo.objects.filter(thread=thread).values_list("text", "done")) == [("Draft", False)]


def test_a_viewer_reads_the_history_with_who_made_each_change_newest_first(viewer_client, owner, bea, thread):
    step = plan_services.todo_add(thread=thread, text="Draft", author="person", person=owner)
    plan_services.todo_set_done(todo=step, done=True, author="agent", person=bea)
    plan_services.todo_update_text(todo=step, text="Draft it", author="mcp", token_name="laptop", person=bea)
    plan_services.todo_delete(todo=step)

    response = viewer_client.get(ws_url(thread, "plan/history/"), **HTMX)

    assert response.status_code == 200
    assert _entries(response.content.decode()) == [
        ("Removed “Draft it”", "Recorded before the first turn"),
        ("Renamed “Draft” to “Draft it”", "By Bea Stone through MCP (token “laptop”) before the first turn"),
        ("Ticked “Draft”", "By the agent during turn 0, asked by Bea Stone"),
        ("Added “Draft”", "By owner before the first turn"),
    ]


def test_an_empty_history_says_what_it_will_hold(owner_client, thread):
    html = owner_client.get(ws_url(thread, "plan/history/"), **HTMX).content.decode()

    assert "No changes yet: every change to the plan is listed here, with who made it." in html
    assert "Show older changes" not in html


def test_a_long_history_comes_a_page_at_a_time_newest_first(owner_client, thread):
    for n in range(PLAN_HISTORY_PAGE + 10):
        plan_services.todo_add(thread=thread, text=f"Step {n}")

    first = owner_client.get(ws_url(thread, "plan/history/"), **HTMX).content.decode()

    shown = [what for what, _who in _entries(first)]
    assert shown == [f"Added “Step {n}”" for n in range(PLAN_HISTORY_PAGE + 9, 9, -1)]
    oldest = PlanChange.objects.get(thread=thread, summary="Added “Step 10”")
    older_url = ws_url(thread, f"plan/history/?before={oldest.pk}")
    assert f'hx-get="{older_url}"' in first

    older = owner_client.get(older_url, **HTMX).content.decode()

    assert [what for what, _who in _entries(older)] == [f"Added “Step {n}”" for n in range(9, -1, -1)]
    assert "Show older changes" not in older and "popover-header" not in older  # rows for the list, not a new list


@pytest.mark.parametrize("before", ["x", "0", "-3", "1.5", "99999999999999999999"])
def test_a_page_asked_for_by_something_other_than_an_id_is_refused_clearly(owner_client, thread, before):
    response = owner_client.get(ws_url(thread, f"plan/history/?before={before}"))

    assert response.status_code == 400
    assert response.content.decode() == "Older changes are asked for by the id of the oldest one shown (a whole number)."


def test_the_push_of_a_plan_change_reads_nothing_from_the_database(thread, django_assert_num_queries):
    """Every plan write (each agent tool call that ticks a step) pushes it,
    and almost no page has the history open (docs/adr/0092)."""
    plan_services.todo_add(thread=thread, text="Draft")
    plan_services.todo_add(thread=thread, text="Review")
    ids = frozenset(PlanChange.objects.filter(thread=thread).values_list("id", flat=True))

    with django_assert_num_queries(0):
        html = panels.render_changes(thread, [Change(thread_id=thread.pk, surface="plan_history", ids=ids)])

    assert _marker(html) == (min(ids), max(ids))
    assert "Draft" not in html and "Review" not in html


def test_after_an_entry_the_history_gives_only_the_newer_ones_newest_first(viewer_client, owner, thread):
    for text in ("Draft", "Review", "Send"):
        plan_services.todo_add(thread=thread, text=text, author="person", person=owner)
    draft = PlanChange.objects.get(thread=thread, summary="Added “Draft”")

    response = viewer_client.get(ws_url(thread, f"plan/history/?after={draft.pk}"), **HTMX)

    assert response.status_code == 200
    html = response.content.decode()
    assert _entries(html) == [
        ("Added “Send”", "By owner before the first turn"),
        ("Added “Review”", "By owner before the first turn"),
    ]
    assert "popover-header" not in html and "Show older changes" not in html  # rows for the open list
    newest = PlanChange.objects.filter(thread=thread).latest("id")
    assert _entries(viewer_client.get(ws_url(thread, f"plan/history/?after={newest.pk}"), **HTMX).content.decode()) == []


def test_many_newer_entries_come_a_page_at_a_time_from_just_after_the_one_asked_about(owner_client, thread):
    plan_services.todo_add(thread=thread, text="Shown")
    shown = PlanChange.objects.get(thread=thread)
    for n in range(PLAN_HISTORY_PAGE + 5):
        plan_services.todo_add(thread=thread, text=f"Step {n}")

    first = _entries(owner_client.get(ws_url(thread, f"plan/history/?after={shown.pk}"), **HTMX).content.decode())

    # The page right after it (no gap above what the page shows), newest first.
    assert [what for what, _who in first] == [f"Added “Step {n}”" for n in range(PLAN_HISTORY_PAGE - 1, -1, -1)]
    last = PlanChange.objects.get(thread=thread, summary=f"Added “Step {PLAN_HISTORY_PAGE - 1}”")
    rest = _entries(owner_client.get(ws_url(thread, f"plan/history/?after={last.pk}"), **HTMX).content.decode())
    assert [what for what, _who in rest] == [f"Added “Step {n}”" for n in range(PLAN_HISTORY_PAGE + 4, PLAN_HISTORY_PAGE - 1, -1)]


def test_after_zero_an_empty_history_gives_every_entry(owner_client, thread):
    plan_services.todo_add(thread=thread, text="First")

    html = owner_client.get(ws_url(thread, "plan/history/?after=0"), **HTMX).content.decode()

    assert [what for what, _who in _entries(html)] == ["Added “First”"]


@pytest.mark.parametrize("after", ["x", "-1", "1.5", "99999999999999999999", "1e3"])
def test_newer_changes_asked_for_by_something_other_than_an_id_are_refused_clearly(owner_client, thread, after):
    response = owner_client.get(ws_url(thread, f"plan/history/?after={after}"))

    assert response.status_code == 400
    assert (
        response.content.decode() == "Newer changes are asked for by the id of the newest one shown (a whole number, 0 for none)."
    )


def test_older_and_newer_changes_at_once_are_refused_clearly(owner_client, thread):
    response = owner_client.get(ws_url(thread, "plan/history/?before=5&after=2"))

    assert response.status_code == 400
    assert response.content.decode() == "Ask for older or for newer changes, not both at once."


def test_another_persons_plan_history_is_404(other_client, owner, thread):
    plan_services.todo_add(thread=thread, text="Private step", author="person", person=owner)

    response = other_client.get(ws_url(thread, "plan/history/"))

    assert answered_as_missing(response)
    assert "Private step" not in response.content.decode()


def test_another_persons_newer_plan_changes_are_404(other_client, owner, thread):
    plan_services.todo_add(thread=thread, text="Private step", author="person", person=owner)

    response = other_client.get(ws_url(thread, "plan/history/?after=0"), **HTMX)

    assert answered_as_missing(response)
    assert "Private step" not in response.content.decode()


def test_the_plan_history_asks_an_anonymous_visitor_to_log_in(client, thread):
    response = client.get(ws_url(thread, "plan/history/"))

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_plan_history_refuses_post(owner_client, thread):
    assert owner_client.post(ws_url(thread, "plan/history/")).status_code == 405


def test_the_page_carries_the_history_control_not_the_history(owner_client, thread):
    plan_services.todo_add(thread=thread, text="Draft")

    html = owner_client.get(f"/threads/{thread.pk}/workspace/").content.decode()

    assert f'hx-get="{ws_url(thread, "plan/history/")}"' in html
    assert '<div id="plan-history" class="popover" popover role="dialog" aria-label="Plan history"></div>' in html
    assert "Added “Draft”" not in html  # fetched when opened

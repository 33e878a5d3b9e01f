"""conversations.views: the thread list, new thread, rename, soft delete, the
activity log and the page of one thread (every panel and the chat, for its
owner only, and light however big the workspace grows): method, access,
database effect and what the person sees."""

import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import ActivityLogEntry, Feedback
from conversations.services import activity_log, thread_create, thread_soft_delete
from tests.support.web import HTMX, answered_as_missing, ws_url
from tests.support.workspaces import big_workspace
from workspace.models import Thread
from workspace.services import artifacts as artifact_services

pytestmark = pytest.mark.django_db


# --- list ------------------------------------------------------------------------


def test_thread_list_shows_own_live_threads_newest_first(owner_client, owner, other_user):
    older = thread_create(owner=owner, title="Older thread")
    newer = thread_create(owner=owner, title="Newer thread")
    Thread.objects.filter(pk=older.pk).update(last_activity_at=timezone.now() - timedelta(days=2))
    gone = thread_create(owner=owner, title="Deleted thread")
    thread_soft_delete(thread=gone)
    thread_create(owner=other_user, title="Someone else's thread")

    response = owner_client.get("/threads/")

    html = response.content.decode()
    assert response.status_code == 200
    assert html.index("Newer thread") < html.index("Older thread")
    assert "Deleted thread" not in html
    assert "Someone else" not in html
    assert f'href="/threads/{newer.pk}/workspace/"' in html
    assert "Last activity" in html


def test_thread_list_empty_state_offers_new_thread(owner_client):
    html = owner_client.get("/threads/").content.decode()
    assert "No threads yet" in html
    assert "New thread" in html


def test_thread_list_requires_login(client):
    response = client.get("/threads/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_root_redirects_to_thread_list(owner_client):
    response = owner_client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/threads/"


def test_thread_list_refuses_post(owner_client):
    assert owner_client.post("/threads/").status_code == 405


# --- create ------------------------------------------------------------------------


def test_new_thread_creates_and_opens_its_workspace(owner_client, owner):
    response = owner_client.post("/threads/new/")

    thread = Thread.objects.get(owner=owner)
    assert response.status_code == 302
    assert response["Location"] == f"/threads/{thread.pk}/workspace/"
    assert thread.title == "New thread"


def test_new_thread_refuses_get(owner_client, owner):
    assert owner_client.get("/threads/new/").status_code == 405
    assert not Thread.objects.filter(owner=owner).exists()


def test_new_thread_requires_login(client):
    response = client.post("/threads/new/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert not Thread.objects.exists()


# --- rename ------------------------------------------------------------------------


def test_rename_with_htmx_returns_the_renamed_row(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/rename/", {"title": "  Survey   of methods "}, **HTMX)

    thread.refresh_from_db()
    assert response.status_code == 200
    assert thread.title == "Survey of methods"
    html = response.content.decode()
    assert f'id="thread-{thread.pk}"' in html
    assert "Survey of methods" in html
    assert "<html" not in html


def test_rename_without_htmx_redirects_to_list(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/rename/", {"title": "Renamed"})
    thread.refresh_from_db()
    assert response.status_code == 302
    assert response["Location"] == "/threads/"
    assert thread.title == "Renamed"


@pytest.mark.parametrize(
    "title, message",
    [("   ", "Title cannot be empty."), ("x" * 201, "Title is too long (201 characters; the limit is 200).")],
)
def test_rename_bad_title_shows_error_and_keeps_old_title(owner_client, thread, title, message):
    response = owner_client.post(f"/threads/{thread.pk}/rename/", {"title": title}, **HTMX)

    thread.refresh_from_db()
    assert response.status_code == 200
    assert thread.title == "Lit review"
    html = response.content.decode()
    assert 'role="alert"' in html
    assert message in html


def test_rename_bad_title_without_htmx_is_400(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/rename/", {"title": ""})
    assert response.status_code == 400
    thread.refresh_from_db()
    assert thread.title == "Lit review"


def test_rename_refuses_get(owner_client, thread):
    assert owner_client.get(f"/threads/{thread.pk}/rename/").status_code == 405


def test_rename_of_another_users_thread_is_404(other_client, thread):
    response = other_client.post(f"/threads/{thread.pk}/rename/", {"title": "Hijacked"}, **HTMX)
    thread.refresh_from_db()
    assert answered_as_missing(response)
    assert thread.title == "Lit review"


def test_rename_requires_login(client, thread):
    response = client.post(f"/threads/{thread.pk}/rename/", {"title": "Anon"})
    thread.refresh_from_db()
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert thread.title == "Lit review"


def test_rename_of_deleted_thread_is_404(owner_client, thread):
    thread_soft_delete(thread=thread)
    assert owner_client.post(f"/threads/{thread.pk}/rename/", {"title": "Back"}).status_code == 404


# --- the chat's model, remembered per thread -----------------------------------------------


def _selected_model(client, thread) -> str:
    html = client.get(f"/threads/{thread.pk}/workspace/").content.decode()
    select = re.search(r'<select id="chat-model" name="model".*?</select>', html, re.S).group(0)
    return re.search(r'<option value="([^"]+)" selected>', select).group(1)


def test_the_model_chosen_in_a_thread_is_offered_again_after_a_reload(owner_client, owner, thread, model_settings):
    other_thread = thread_create(owner=owner, title="Another")
    assert _selected_model(owner_client, thread) == "env:scripted-default"

    response = owner_client.post(f"/threads/{thread.pk}/model/", {"model": "env:scripted-other"}, **HTMX)

    assert response.status_code == 200 and response.content == b""
    # The key names the provider too (agent.catalogue): here the environment's.
    assert Thread.objects.get(pk=thread.pk).chat_model == "env:scripted-other"
    assert _selected_model(owner_client, thread) == "env:scripted-other"
    assert _selected_model(owner_client, other_thread) == "env:scripted-default"  # per thread


def test_an_unknown_model_is_refused_and_nothing_is_remembered(owner_client, thread, model_settings):
    response = owner_client.post(f"/threads/{thread.pk}/model/", {"model": "gpt-unknown"}, **HTMX)
    assert response.status_code == 200
    assert "Unknown model “gpt-unknown”. Choose one of: scripted-default, scripted-other." in response.content.decode()
    assert Thread.objects.get(pk=thread.pk).chat_model == ""

    plain = owner_client.post(f"/threads/{thread.pk}/model/", {"model": ""})
    assert plain.status_code == 400 and "Choose a model from the list." in plain.content.decode()


def test_choosing_a_model_staff_disabled_since_the_page_loaded_names_it_as_the_owner_saw_it(
    owner_client, owner, thread, model_settings
):
    from agent.models import CatalogueModel, Provider

    lab = Provider.objects.create(name="Lab", base_url="http://127.0.0.1:9/v1", api_key="sk-lab")
    chosen = CatalogueModel.objects.create(provider=lab, name="lab-big", label="Big", enabled=False)
    line = owner_client.post(f"/threads/{thread.pk}/model/", {"model": f"catalogue:{chosen.pk}"}, **HTMX).content.decode()
    assert "“Big (Lab)” is no longer offered. Choose another model." in line
    assert f"catalogue:{chosen.pk}" not in line and "scripted-default" not in line
    assert Thread.objects.get(pk=thread.pk).chat_model == ""


def test_a_remembered_model_no_longer_offered_falls_back_to_the_default(owner_client, thread, model_settings):
    Thread.objects.filter(pk=thread.pk).update(chat_model="env:scripted-other")
    model_settings.HAICO_MODELS = ["scripted-default", "scripted-third"]
    assert _selected_model(owner_client, thread) == "env:scripted-default"


def test_another_persons_thread_model_cannot_be_chosen(client, other_user, thread, model_settings):
    client.force_login(other_user)
    response = client.post(f"/threads/{thread.pk}/model/", {"model": "scripted-other"}, **HTMX)
    assert answered_as_missing(response)
    assert Thread.objects.get(pk=thread.pk).chat_model == ""


# --- delete ------------------------------------------------------------------------


def test_delete_with_htmx_soft_deletes_and_removes_the_row(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/delete/", **HTMX)

    thread.refresh_from_db()
    assert response.status_code == 200
    assert response.content == b""
    assert thread.is_deleted and thread.deleted_at is not None
    assert "Lit review" not in owner_client.get("/threads/").content.decode()
    assert owner_client.get(ws_url(thread)).status_code == 404


def test_delete_without_htmx_redirects_to_list(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/delete/")
    thread.refresh_from_db()
    assert response.status_code == 302
    assert response["Location"] == "/threads/"
    assert thread.is_deleted


def test_delete_refuses_get(owner_client, thread):
    assert owner_client.get(f"/threads/{thread.pk}/delete/").status_code == 405
    thread.refresh_from_db()
    assert not thread.is_deleted


def test_delete_of_another_users_thread_is_404(other_client, thread):
    assert other_client.post(f"/threads/{thread.pk}/delete/").status_code == 404
    thread.refresh_from_db()
    assert not thread.is_deleted


def test_delete_requires_login(client, thread):
    response = client.post(f"/threads/{thread.pk}/delete/")
    assert response.status_code == 302
    thread.refresh_from_db()
    assert not thread.is_deleted


# --- workspace page -----------------------------------------------------------------


def test_workspace_page_shows_every_region(owner_client, thread):
    response = owner_client.get(ws_url(thread))

    html = response.content.decode()
    assert response.status_code == 200
    for label in ("Preferences", "Planning", "Document", "Chat", "Trajectory"):
        assert f'aria-label="{label}"' in html, label
    for panel_id in ("panel-objective", "panel-preferences", "panel-plan", "panel-centre", "panel-chat"):
        assert f'id="{panel_id}"' in html, panel_id
    assert "Lit review" in html
    assert "Each turn you send appears here" in html  # the trajectory map of a thread with no turns yet
    assert "hx-swap-oob" not in html
    assert "X-CSRFToken" in html


def test_workspace_page_of_another_users_thread_is_404(other_client, thread):
    assert other_client.get(ws_url(thread)).status_code == 404


def test_workspace_page_of_unknown_thread_is_404(owner_client):
    assert owner_client.get(f"/threads/{uuid.uuid4()}/workspace/").status_code == 404


def test_workspace_page_of_deleted_thread_is_404(owner_client, thread):
    thread_soft_delete(thread=thread)
    assert owner_client.get(ws_url(thread)).status_code == 404


def test_workspace_page_requires_login(client, thread):
    response = client.get(ws_url(thread))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_workspace_page_refuses_post(owner_client, thread):
    assert owner_client.post(ws_url(thread)).status_code == 405


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
    thread = big_workspace(owner, title="Big")

    response = _page(owner_client, thread)

    html = response.content.decode()
    assert response.status_code == 200
    assert len(response.content) <= 200 * 1024, len(response.content)
    assert html.count('class="step') >= 300 and html.count('class="pref pref-') == 100
    steps = html.split('id="plan-steps"', 1)[1].split("</ol>", 1)[0]
    assert "<form" not in steps and "hx-post" not in steps
    # A long document's preview comes by its own request after the page.
    assert f"/threads/{thread.pk}/workspace/document/preview/" in html


# --- activity log (model warnings and turn errors, in the chat header) ---------------


def _url(thread):
    return f"/threads/{thread.pk}/activity/"


def test_owner_sees_warnings_and_errors_newest_first(owner_client, thread):
    activity_log(
        thread=thread, message="The model's reply was cut off; raise HAICO_MODEL_MAX_TOKENS.", level="warning", turn_index=2
    )
    activity_log(
        thread=thread, message="The model server could not be reached.", level=ActivityLogEntry.Level.ERROR, turn_index=3
    )
    response = owner_client.get(_url(thread), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.index("could not be reached") < html.index("raise HAICO_MODEL_MAX_TOKENS")
    assert "turn 3" in html and "Warning" in html and "Error" in html


def test_an_entry_shows_its_detail_one_click_away_escaped(owner_client, thread):
    activity_log(
        thread=thread,
        message="A step did not work: <b>x</b>.",
        kind=ActivityLogEntry.Kind.TOOL_FAILURE,
        detail='tool: toggle_todos\narguments: {"indices": [9]} <script>',
        level="warning",
        turn_index=1,
    )
    html = owner_client.get(_url(thread), HTTP_HX_REQUEST="true").content.decode()
    assert "A step did not work: &lt;b&gt;x&lt;/b&gt;." in html
    details = html[html.index('<details class="activity-detail">') :]
    assert details.index("<summary>Details</summary>") < details.index("tool: toggle_todos")
    assert "&lt;script&gt;" in details and "<script>" not in html


def test_an_entry_without_detail_has_no_details(owner_client, thread):
    activity_log(thread=thread, message="Plain.", level="info")
    html = owner_client.get(_url(thread), HTTP_HX_REQUEST="true").content.decode()
    assert "Plain." in html and "activity-detail" not in html


def test_an_empty_log_says_so(owner_client, thread):
    response = owner_client.get(_url(thread))
    assert "no warnings or errors" in response.content.decode()


def test_the_workspace_page_offers_the_activity_log(owner_client, thread):
    html = owner_client.get(f"/threads/{thread.pk}/workspace/").content.decode()
    assert "Activity log" in html and _url(thread) in html


def test_another_user_gets_404_and_sees_nothing(other_client, thread):
    activity_log(thread=thread, message="secret warning", level="warning")
    response = other_client.get(_url(thread))
    assert response.status_code == 404
    assert b"secret warning" not in response.content


def test_anonymous_is_sent_to_login(client, thread):
    response = client.get(_url(thread))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_post_is_not_allowed(owner_client, thread):
    assert owner_client.post(_url(thread)).status_code == 405


# --- feedback on a turn ---------------------------------------------------------------------


@pytest.fixture
def ended_turns(thread):
    from conversations.turns import slot

    for n in (1, 2):
        slot.turn_begin(thread=thread, user_message=f"message {n}")
        slot.turn_finish(thread=thread, turn_index=n)
    thread.refresh_from_db()
    return thread


def feedback_url(thread, turn=1):
    return f"/threads/{thread.pk}/turns/{turn}/feedback/"


GOOD_FEEDBACK = {"scope": "document", "aspect": "correctness", "rating": "4", "comment": "Mostly right"}


def test_each_ended_turn_offers_feedback_with_the_count_left(owner_client, ended_turns, owner):
    from conversations.services import feedback_leave

    feedback_leave(thread=ended_turns, user=owner, turn_index=2, rating=3)
    html = owner_client.get(ws_url(ended_turns)).content.decode()
    assert f'hx-get="{feedback_url(ended_turns, 1)}"' in html
    assert 'Feedback<span class="visually-hidden"> on turn 2</span> (1 left)' in html
    assert 'Feedback<span class="visually-hidden"> on turn 1</span></button>' in html


def test_a_running_turn_offers_no_feedback_yet(owner_client, ended_turns):
    from conversations.turns import slot

    slot.turn_begin(thread=ended_turns, user_message="third")
    html = owner_client.get(ws_url(ended_turns)).content.decode()
    assert feedback_url(ended_turns, 2) in html
    assert feedback_url(ended_turns, 3) not in html
    response = owner_client.post(feedback_url(ended_turns, 3), GOOD_FEEDBACK, **HTMX)
    assert "still running" in response.content.decode()
    assert not Feedback.objects.exists()


def test_opening_feedback_shows_a_labelled_form(owner_client, ended_turns):
    response = owner_client.get(feedback_url(ended_turns, 2), **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="turn-2-feedback"' in html and "Your feedback on turn 2" in html
    for label in ("About", "Which artifact", "Aspect", "Comment (optional)"):
        assert f">{label}:</label>" in html
    assert "Rating, 1 (poor) to 5 (excellent)" in html
    assert 'value="preferences">Followed my preferences' in html and 'value="artifact">An artifact' in html


def test_leaving_feedback_stores_it_and_shows_it(owner_client, ended_turns, owner):
    response = owner_client.post(feedback_url(ended_turns, 2), GOOD_FEEDBACK, **HTMX)
    html = response.content.decode()
    stored = Feedback.objects.get()
    assert (stored.thread, stored.user, stored.turn_index, stored.scope, stored.aspect, stored.rating, stored.comment) == (
        ended_turns,
        owner,
        2,
        "document",
        "correctness",
        4,
        "Mostly right",
    )
    assert "Thank you: your feedback is saved." in html
    assert "The document" in html and "Correctness" in html and "4 of 5" in html and "Mostly right" in html


def test_feedback_on_an_artifact_lists_the_turns_artifacts(owner_client, ended_turns):
    early = artifact_services.artifact_create(
        thread=ended_turns, artifact_type="data_table", title="Early table", payload={"columns": ["A"], "rows": []}, turn_index=1
    )
    artifact_services.artifact_create(
        thread=ended_turns, artifact_type="data_table", title="Later table", payload={"columns": ["A"], "rows": []}, turn_index=2
    )
    html = owner_client.get(feedback_url(ended_turns, 1), **HTMX).content.decode()
    assert "Early table" in html and "Later table" not in html
    assert ">Choose an artifact</option>" in html and "---------" not in html
    owner_client.post(feedback_url(ended_turns, 1), {**GOOD_FEEDBACK, "scope": "artifact", "artifact": str(early.pk)}, **HTMX)
    assert Feedback.objects.get().artifact == early


@pytest.mark.parametrize(
    "data, message",
    [
        ({"rating": "9"}, "Choose a rating from 1 (poor) to 5 (excellent)."),
        ({"rating": ""}, "Choose a rating from 1 (poor) to 5 (excellent)."),
        ({"rating": "x"}, "Choose a rating from 1 (poor) to 5 (excellent)."),
        ({"aspect": "vibes"}, "Choose an aspect from the list."),
        ({"scope": ""}, "Choose what the feedback is about."),
        ({"scope": "artifact"}, "Choose which artifact the feedback is about."),
        ({"scope": "artifact", "artifact": "99999"}, "That artifact is not part of this thread at this turn."),
        ({"scope": "artifact", "artifact": "nope"}, "That artifact is not part of this thread at this turn."),
        ({"scope": "artifact", "artifact": "9" * 30}, "That artifact is not part of this thread at this turn."),
        ({"rating": "9" * 30}, "Choose a rating from 1 (poor) to 5 (excellent)."),
        ({"comment": "a\x00b"}, "Comment (optional) cannot contain NUL characters."),
        ({"comment": "x" * 5001}, "Comment (optional) is too long"),
    ],
)
def test_bad_feedback_is_refused_with_a_message_and_nothing_stored(owner_client, ended_turns, data, message):
    htmx = owner_client.post(feedback_url(ended_turns), {**GOOD_FEEDBACK, **data}, **HTMX)
    plain = owner_client.post(feedback_url(ended_turns), {**GOOD_FEEDBACK, **data})
    assert htmx.status_code == 200 and plain.status_code == 400
    for response in (htmx, plain):
        assert message in response.content.decode()
    assert not Feedback.objects.exists()


def test_feedback_on_a_turn_that_does_not_exist_is_a_404(owner_client, ended_turns):
    assert owner_client.get(feedback_url(ended_turns, 3)).status_code == 404
    assert owner_client.post(feedback_url(ended_turns, 0), GOOD_FEEDBACK).status_code == 404
    assert not Feedback.objects.exists()


def test_feedback_without_javascript_works_on_its_own_page(owner_client, ended_turns):
    response = owner_client.post(feedback_url(ended_turns), GOOD_FEEDBACK)
    assert response.status_code == 302 and response["Location"] == feedback_url(ended_turns)
    page = owner_client.get(feedback_url(ended_turns)).content.decode()
    assert "<html" in page and "Mostly right" in page and f'href="{ws_url(ended_turns)}"' in page


def test_the_person_edits_then_removes_their_feedback(owner_client, ended_turns, owner):
    from conversations.services import feedback_leave

    entry = feedback_leave(thread=ended_turns, user=owner, turn_index=1, rating=2, aspect="tone", comment="Too curt")
    edit_url = f"/threads/{ended_turns.pk}/feedback/{entry.pk}/"

    form = owner_client.get(edit_url, **HTMX).content.decode()
    assert "Change this feedback" in form and "Too curt</textarea>" in form
    assert 'value="tone" selected' in form
    assert re.search(r'value="2"[^>]*checked', form) and len(re.findall(r"checked", form)) == 1

    changed = owner_client.post(edit_url, {"scope": "turn", "aspect": "tone", "rating": "4", "comment": "Fine now"}, **HTMX)
    entry.refresh_from_db()
    assert (entry.rating, entry.comment) == (4, "Fine now")
    assert "Your feedback is changed." in changed.content.decode()

    removed = owner_client.post(f"{edit_url}delete/", **HTMX)
    assert not Feedback.objects.exists()
    assert "Your feedback is removed." in removed.content.decode() and "Fine now" not in removed.content.decode()


def test_an_edit_that_would_duplicate_another_entry_is_refused(owner_client, ended_turns, owner):
    from conversations.services import feedback_leave

    feedback_leave(thread=ended_turns, user=owner, turn_index=1, rating=2, aspect="tone")
    other = feedback_leave(thread=ended_turns, user=owner, turn_index=1, rating=5, aspect="correctness")
    response = owner_client.post(
        f"/threads/{ended_turns.pk}/feedback/{other.pk}/", {"scope": "turn", "aspect": "tone", "rating": "3"}, **HTMX
    )
    assert response.status_code == 200
    assert "You already rated tone of that on turn 1" in response.content.decode()
    assert Feedback.objects.get(pk=other.pk).aspect == "correctness"


def test_closing_feedback_gives_back_the_button_with_the_count(owner_client, ended_turns, owner):
    from conversations.services import feedback_leave

    feedback_leave(thread=ended_turns, user=owner, turn_index=1, rating=2)
    html = owner_client.get(feedback_url(ended_turns), {"closed": "1"}, **HTMX).content.decode()
    assert html.strip().startswith('<div id="turn-1-feedback" class="turn-feedback">')
    assert "(1 left)" in html and "autofocus" in html


def test_another_person_gets_404_for_feedback_and_changes_nothing(other_client, ended_turns, owner):
    from conversations.services import feedback_leave

    entry = feedback_leave(thread=ended_turns, user=owner, turn_index=1, rating=2, comment="owner-private")
    edit_url = f"/threads/{ended_turns.pk}/feedback/{entry.pk}/"
    for response in (
        other_client.get(feedback_url(ended_turns)),
        other_client.post(feedback_url(ended_turns), GOOD_FEEDBACK),
        other_client.get(edit_url),
        other_client.post(edit_url, GOOD_FEEDBACK),
        other_client.post(f"{edit_url}delete/"),
    ):
        assert response.status_code == 404
        assert "owner-private" not in response.content.decode()
    htmx = other_client.post(f"{edit_url}delete/", **HTMX)
    assert answered_as_missing(htmx)
    entry.refresh_from_db()
    assert (Feedback.objects.count(), entry.rating, entry.comment) == (1, 2, "owner-private")


def test_an_anonymous_visitor_is_sent_to_log_in_for_feedback(client, ended_turns):
    for response in (client.get(feedback_url(ended_turns)), client.post(feedback_url(ended_turns), GOOD_FEEDBACK)):
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not Feedback.objects.exists()


# --- the Mode selector (docs/adr/0018) ------------------------------------------------


def test_the_page_shows_the_mode_selector_with_the_threads_mode(owner_client, thread):
    Thread.objects.filter(pk=thread.pk).update(mode="plan")
    html = owner_client.get(f"/threads/{thread.pk}/workspace/").content.decode()
    select = re.search(r'<select id="chat-mode"[^>]*aria-label="Mode".*?</select>', html, flags=re.DOTALL).group(0)
    assert re.findall(r">(\w+)</option>", select) == ["Explore", "Plan", "Execute"]
    assert '<option value="plan" selected>' in select


def test_choosing_a_mode_stores_it_and_answers_with_its_value(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/mode/", {"mode": "explore"}, **HTMX)
    assert response.status_code == 200
    # The selector is not sent again (it would take a keyboard user's focus): its value is set in place.
    assert 'data-live-patch="value" data-target="chat-mode" data-value="explore"' in response.content.decode()
    assert "<select" not in response.content.decode()
    assert Thread.objects.get(pk=thread.pk).mode == "explore"


def test_choosing_a_mode_without_htmx_goes_back_to_the_page(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/mode/", {"mode": "plan"})
    assert response.status_code == 302 and response.url == f"/threads/{thread.pk}/workspace/"
    assert Thread.objects.get(pk=thread.pk).mode == "plan"


@pytest.mark.parametrize("data", [{"mode": "destroy"}, {}, {"mode": ""}])
def test_an_unknown_mode_is_refused_with_a_message_and_nothing_changes(owner_client, thread, data):
    response = owner_client.post(f"/threads/{thread.pk}/mode/", data, **HTMX)
    assert response.status_code == 200
    assert "Choose a mode: one of Explore, Plan, Execute." in response.headers["HX-Trigger"]
    plain = owner_client.post(f"/threads/{thread.pk}/mode/", data)
    assert plain.status_code == 400 and "Choose a mode" in plain.content.decode()
    assert Thread.objects.get(pk=thread.pk).mode == "execute"


def test_another_persons_thread_mode_cannot_be_changed(client, other_user, thread):
    client.force_login(other_user)
    response = client.post(f"/threads/{thread.pk}/mode/", {"mode": "explore"}, **HTMX)
    assert answered_as_missing(response)
    assert Thread.objects.get(pk=thread.pk).mode == "execute"


def test_a_turn_without_artifacts_says_so_in_the_artifact_choice(owner_client, ended_turns):
    html = owner_client.get(feedback_url(ended_turns, 1), **HTMX).content.decode()
    assert ">No artifacts by this turn</option>" in html and "---------" not in html


def test_a_branch_page_names_where_it_came_from_and_links_back(owner_client, ended_turns, owner):
    from conversations.models import BranchLink

    branch = thread_create(owner=owner, title="message 1 (branch from turn 1)")
    BranchLink.objects.create(thread=branch, parent=ended_turns, branch_point_turn=1, status=BranchLink.Status.ACTIVE)
    html = owner_client.get(ws_url(branch)).content.decode()
    link = f'<a class="topbar-branch" href="/threads/{ended_turns.pk}/workspace/">Branch of “{ended_turns.title}” from turn 1</a>'
    assert link in html
    # The parent's own page, and a branch whose parent is gone, say nothing of it.
    assert "topbar-branch" not in owner_client.get(ws_url(ended_turns)).content.decode()
    thread_soft_delete(thread=ended_turns)
    assert "topbar-branch" not in owner_client.get(ws_url(branch)).content.decode()


def test_a_branch_of_another_persons_thread_names_no_origin_and_maps_alone(owner_client, ended_turns, owner, other_user):
    """A link to a parent another person owns (an owner changed by staff)
    is neither the top bar's origin nor an edge of the map: the page would
    show the owner a title and a turn that are not theirs."""
    from conversations.models import BranchLink

    branch = thread_create(owner=owner, title="A branch")
    BranchLink.objects.create(thread=branch, parent=ended_turns, branch_point_turn=1, status=BranchLink.Status.ACTIVE)
    Thread.objects.filter(pk=ended_turns.pk).update(owner=other_user)
    html = owner_client.get(ws_url(branch)).content.decode()
    assert "topbar-branch" not in html
    assert str(ended_turns.pk) not in html and ended_turns.title not in html

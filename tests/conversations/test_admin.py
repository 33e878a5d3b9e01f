"""The staff admin (conversations.admin, the site's admin): every model
reachable, preference locks and thread moderation going through the services
and recorded."""

import re

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse
from django.utils.html import escape

from conversations import services as conversation_services
from conversations import sharing
from conversations.models import (
    ActivityLogEntry,
    BranchLink,
    Feedback,
    ModerationAction,
)
from conversations.turns import slot
from tests.support.admin import _change, _changelist
from workspace.models import (
    Artifact,
    Document,
    Objective,
    PlanChange,
    Preference,
    Thread,
    ThreadMember,
    Todo,
    WorkspaceSnapshot,
)
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db


ALL_KEYS = [
    "thread",
    "objective",
    "hard",
    "todo",
    "plan_change",
    "document",
    "artifact",
    "snapshot",
    "feedback",
    "branch",
    "activity",
    "moderation",
]


@pytest.mark.parametrize("key", ALL_KEYS)
def test_staff_opens_every_changelist_and_change_page(staff_client, populated, key):
    obj = populated[key]
    listing = staff_client.get(_changelist(obj))
    assert listing.status_code == 200
    assert _change(obj) in listing.content.decode()
    detail = staff_client.get(_change(obj))
    assert detail.status_code == 200


def test_admin_index_lists_every_model_under_haico_header(staff_client, populated):
    response = staff_client.get(reverse("admin:index"))
    body = response.content.decode()
    assert response.status_code == 200
    assert "HAICO administration" in body
    for model in (
        Thread,
        BranchLink,
        Feedback,
        ModerationAction,
        ActivityLogEntry,
        Objective,
        Preference,
        Todo,
        PlanChange,
        Document,
        Artifact,
        WorkspaceSnapshot,
    ):
        assert _changelist(model()) in body


def test_changelist_search_with_a_non_uuid_term_does_not_fail(staff_client, populated):
    response = staff_client.get(_changelist(populated["thread"]), {"q": "Lit"})
    assert response.status_code == 200
    assert "Lit review" in response.content.decode()
    for key in ("snapshot", "hard", "moderation", "artifact"):
        assert staff_client.get(_changelist(populated[key]), {"q": "not-a-uuid"}).status_code == 200


def test_changelist_search_by_thread_id_finds_its_rows(staff_client, populated, owner):
    other = conversation_services.thread_create(owner=owner, title="Unrelated")
    preferences_services.preference_add(thread=other, title="Elsewhere", respect_lock=False)
    response = staff_client.get(_changelist(populated["hard"]), {"q": str(populated["thread"].pk)})
    body = response.content.decode()
    assert "Short paragraphs" in body
    assert "Elsewhere" not in body


# --- non-staff ------------------------------------------------------------------


def test_non_staff_owner_is_sent_to_admin_login(owner_client, populated):
    for url in (reverse("admin:index"), _changelist(populated["thread"]), _change(populated["snapshot"])):
        response = owner_client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))


def test_anonymous_is_sent_to_admin_login(client, populated):
    response = client.get(_changelist(populated["snapshot"]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


# --- preference lock / unlock -------------------------------------------------------


def _lock_records(preference):
    return ModerationAction.objects.filter(
        thread=preference.thread, action__in=[ModerationAction.Action.LOCK_PREFERENCE, ModerationAction.Action.UNLOCK_PREFERENCE]
    )


def test_lock_action_locks_through_the_service_and_records_it(staff_client, staff, populated):
    hard, soft = populated["hard"], populated["soft"]
    response = staff_client.post(
        _changelist(hard), {"action": "lock_selected", "_selected_action": [hard.pk, soft.pk]}, follow=True
    )
    assert response.status_code == 200
    assert "Locked 2 preference(s)" in response.content.decode()
    assert set(Preference.objects.values_list("locked", flat=True)) == {True}
    records = _lock_records(hard)
    assert records.count() == 2
    assert all(r.staff_user == staff and r.action == ModerationAction.Action.LOCK_PREFERENCE for r in records)
    assert sorted(r.detail for r in records) == ["Preference 'Cite <b>peer-reviewed</b> work'", "Preference 'Short paragraphs'"]


def test_lock_action_on_an_already_locked_preference_records_nothing(staff_client, populated):
    hard = populated["hard"]
    preferences_services.preference_set_locked(preference=hard, locked=True, respect_lock=False)
    staff_client.post(_changelist(hard), {"action": "lock_selected", "_selected_action": [hard.pk]})
    assert not _lock_records(hard).exists()


def test_unlock_action_unlocks_and_records_it(staff_client, staff, populated):
    soft = populated["soft"]
    preferences_services.preference_set_locked(preference=soft, locked=True, respect_lock=False)
    staff_client.post(_changelist(soft), {"action": "unlock_selected", "_selected_action": [soft.pk]})
    soft.refresh_from_db()
    assert soft.locked is False
    record = _lock_records(soft).get()
    assert (record.action, record.staff_user, record.detail) == (
        ModerationAction.Action.UNLOCK_PREFERENCE,
        staff,
        "Preference 'Short paragraphs'",
    )


def _list_editable_post(preferences, locked_ids):
    """The list's Save as Django's editable columns post it: every row's box as the list showed it."""
    data = {
        "form-TOTAL_FORMS": str(len(preferences)),
        "form-INITIAL_FORMS": str(len(preferences)),
        "form-MIN_NUM_FORMS": "0",
        "form-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    for n, preference in enumerate(preferences):
        data[f"form-{n}-id"] = str(preference.pk)
        if preference.pk in locked_ids:
            data[f"form-{n}-locked"] = "on"
    return data


def _person(user):
    """A browser of its own for `user`, beside the staff member's."""
    from django.test import Client

    browser = Client()
    browser.force_login(user)
    return browser


def _owner_locks(owner, preference, locked=True):
    url = reverse("workspace:preference-lock", kwargs={"thread_id": preference.thread_id, "pk": preference.pk})
    response = _person(owner).post(url, {"locked": "on" if locked else ""})
    assert response.status_code in (200, 204, 302)
    assert Preference.objects.get(pk=preference.pk).locked is locked


def test_the_preference_list_has_no_editable_lock_column_so_its_save_undoes_no_lock_the_owner_set(staff_client, owner, populated):
    """Its Save posted every row's box as the list showed it: a lock the
    owner set after the list was loaded was undone (docs/adr/0129)."""
    hard, soft = populated["hard"], populated["soft"]
    page = staff_client.get(_changelist(hard))
    assert 'name="form-0-locked"' not in page.content.decode()
    preferences = list(page.context["cl"].result_list)
    _owner_locks(owner, soft)

    # The list's Save as an editable column posted it, ticking "hard" only.
    staff_client.post(_changelist(hard), _list_editable_post(preferences, {hard.pk}))

    assert dict(Preference.objects.values_list("title", "locked")) == {
        "Cite <b>peer-reviewed</b> work": False,
        "Short paragraphs": True,
    }
    assert not _lock_records(hard).exists()


def test_the_unlock_action_leaves_rows_it_was_not_asked_about_and_the_lock_action_skips_rows_locked_meanwhile(
    staff_client, staff, owner, populated
):
    hard, soft = populated["hard"], populated["soft"]
    _owner_locks(owner, soft)  # after staff loaded the list, before they pressed Lock on both
    staff_client.post(_changelist(hard), {"action": "lock_selected", "_selected_action": [hard.pk, soft.pk]})
    assert set(Preference.objects.values_list("locked", flat=True)) == {True}
    assert [r.detail for r in _lock_records(hard)] == ["Preference 'Cite <b>peer-reviewed</b> work'"]


def _shown_lock(page) -> str:
    return page.context["adminform"].form["was_locked"].value()


def test_preference_change_form_only_changes_the_lock(staff_client, staff, populated):
    soft = populated["soft"]
    shown = _shown_lock(staff_client.get(_change(soft)))
    assert shown == "unlocked"
    response = staff_client.post(_change(soft), {"locked": "on", "was_locked": shown, "title": "Hijacked", "kind": "hard"})
    assert response.status_code == 302
    soft.refresh_from_db()
    assert (soft.locked, soft.title, soft.kind) == (True, "Short paragraphs", "soft")
    assert _lock_records(soft).get().staff_user == staff


def test_staff_saving_a_preference_page_opened_before_the_owner_locked_it_keeps_the_owners_lock(
    staff_client, staff, owner, populated
):
    """Django takes a form's initial values from the row when it is posted:
    the box left unticked read as "unlock", and the owner's lock went."""
    soft = populated["soft"]
    page = staff_client.get(_change(soft))
    assert _shown_lock(page) == "unlocked"
    _owner_locks(owner, soft)

    # Staff press Save on the page as it was shown: the box unticked.
    response = staff_client.post(_change(soft), {"was_locked": "unlocked"})

    assert response.status_code == 200
    assert (
        "Someone else locked this preference meanwhile: it is locked now. Nothing was saved: "
        "Save again to make it unlocked, or leave the page to keep it locked." in response.content.decode()
    )
    assert Preference.objects.get(pk=soft.pk).locked is True
    assert not _lock_records(soft).exists()
    # The page now carries the lock as it is: Save again unlocks it, knowingly, on record.
    assert _shown_lock(response) == "locked"
    assert staff_client.post(_change(soft), {"was_locked": "locked"}).status_code == 302
    assert Preference.objects.get(pk=soft.pk).locked is False
    assert _lock_records(soft).get().action == ModerationAction.Action.UNLOCK_PREFERENCE


def test_staff_ticking_the_lock_the_owner_set_meanwhile_saves_without_a_complaint_or_a_record(staff_client, owner, populated):
    soft = populated["soft"]
    staff_client.get(_change(soft))
    _owner_locks(owner, soft)
    assert staff_client.post(_change(soft), {"was_locked": "unlocked", "locked": "on"}).status_code == 302
    assert Preference.objects.get(pk=soft.pk).locked is True
    assert not _lock_records(soft).exists()


def test_a_preference_page_that_does_not_say_what_it_showed_saves_nothing(staff_client, owner, populated):
    soft = populated["soft"]
    _owner_locks(owner, soft)
    response = staff_client.post(_change(soft), {})
    assert response.status_code == 200
    assert "This page did not say what it showed of the lock; reload it and save again." in response.content.decode()
    assert Preference.objects.get(pk=soft.pk).locked is True


def test_preferences_cannot_be_added_or_deleted_in_admin(staff_client, populated):
    hard = populated["hard"]
    assert staff_client.get(reverse("admin:workspace_preference_add")).status_code == 403
    assert staff_client.post(reverse("admin:workspace_preference_delete", args=[hard.pk]), {"post": "yes"}).status_code == 403
    assert Preference.objects.filter(pk=hard.pk).exists()


# --- thread moderation ------------------------------------------------------------------


def test_soft_delete_action_hides_the_thread_and_records_who(staff_client, staff, populated, owner):
    thread = populated["thread"]
    keep = conversation_services.thread_create(owner=owner, title="Keep me")
    before = ModerationAction.objects.count()
    response = staff_client.post(
        _changelist(thread), {"action": "soft_delete_selected", "_selected_action": [str(thread.pk)]}, follow=True
    )
    assert "Soft-deleted 1 thread(s)" in response.content.decode()
    thread.refresh_from_db()
    keep.refresh_from_db()
    assert thread.is_deleted and thread.deleted_at is not None
    assert not keep.is_deleted
    assert ModerationAction.objects.count() == before + 1
    record = ModerationAction.objects.filter(thread=thread, action=ModerationAction.Action.SOFT_DELETE, staff_user=staff).latest(
        "id"
    )
    assert record.created_at is not None
    # The owner no longer sees it.
    from workspace.selectors import threads_for_user

    assert thread not in threads_for_user(user=owner)


def test_soft_delete_action_skips_threads_already_deleted(staff_client, populated):
    thread = populated["thread"]
    conversation_services.thread_soft_delete(thread=thread)
    before = ModerationAction.objects.count()
    staff_client.post(_changelist(thread), {"action": "soft_delete_selected", "_selected_action": [str(thread.pk)]})
    assert ModerationAction.objects.count() == before


def test_restore_action_brings_the_thread_back_and_records_it(staff_client, staff, populated, owner):
    thread = populated["thread"]
    conversation_services.thread_soft_delete(thread=thread, staff_user=staff)
    staff_client.post(_changelist(thread), {"action": "restore_selected", "_selected_action": [str(thread.pk)]})
    thread.refresh_from_db()
    assert not thread.is_deleted and thread.deleted_at is None
    assert ModerationAction.objects.filter(thread=thread, action=ModerationAction.Action.RESTORE, staff_user=staff).count() == 1
    from workspace.selectors import threads_for_user

    assert thread in threads_for_user(user=owner)


def test_restore_action_leaves_a_branch_that_is_still_being_made_hidden(staff_client, populated, owner):
    from conversations.models import BranchLink
    from workspace.models import Thread

    pending = Thread.objects.create(owner=owner, title="Half made", is_deleted=True)
    BranchLink.objects.create(thread=pending, parent=populated["thread"], branch_point_turn=1)
    staff_client.post(_changelist(pending), {"action": "restore_selected", "_selected_action": [str(pending.pk)]})
    pending.refresh_from_db()
    assert pending.is_deleted


def test_thread_change_page_shows_moderation_history(staff_client, staff, populated):
    thread = populated["thread"]
    staff_client.post(_changelist(thread), {"action": "soft_delete_selected", "_selected_action": [str(thread.pk)]})
    staff_client.post(_changelist(thread), {"action": "restore_selected", "_selected_action": [str(thread.pk)]})
    body = staff_client.get(_change(thread)).content.decode()
    assert "Moderation history" in body
    assert body.count("Soft-deleted") >= 2  # the fixture's record and the action's
    assert "Restored" in body
    assert "spam" in body
    # Read-only inline: no way to add, edit or remove history from the thread page.
    assert "moderation_actions-0-DELETE" not in body
    assert 'name="moderation_actions-0-detail"' not in body
    before = list(ModerationAction.objects.order_by("id").values_list("id", "action", "detail"))
    staff_client.post(
        _change(thread),
        {
            "title": thread.title,
            "moderation_actions-TOTAL_FORMS": "1",
            "moderation_actions-INITIAL_FORMS": "0",
            "moderation_actions-0-action": "restore",
            "moderation_actions-0-detail": "forged",
        },
    )
    assert list(ModerationAction.objects.order_by("id").values_list("id", "action", "detail")) == before


def test_moderation_log_has_its_own_read_only_changelist(staff_client, populated):
    record = populated["moderation"]
    body = staff_client.get(_changelist(record)).content.decode()
    assert "spam" in body
    assert staff_client.get(reverse("admin:conversations_moderationaction_add")).status_code == 403
    assert staff_client.post(_change(record), {"detail": "nothing happened"}).status_code == 403
    assert (
        staff_client.post(reverse("admin:conversations_moderationaction_delete", args=[record.pk]), {"post": "yes"}).status_code
        == 403
    )
    record.refresh_from_db()
    assert record.detail == "spam"


def test_thread_changelist_filters_by_owner_and_deleted(staff_client, populated, other_user):
    mine = populated["thread"]
    theirs = conversation_services.thread_create(owner=other_user, title="Other person's thread")
    conversation_services.thread_soft_delete(thread=theirs)
    url = _changelist(mine)
    by_owner = staff_client.get(url, {"owner__id__exact": other_user.pk})
    assert list(by_owner.context["cl"].result_list) == [theirs]
    deleted = staff_client.get(url, {"is_deleted__exact": "1"})
    assert list(deleted.context["cl"].result_list) == [theirs]
    body = staff_client.get(url).content.decode()
    assert "Turns" in body
    assert "Other person&#x27;s thread" in body


def test_thread_rename_in_admin_goes_through_validation(staff_client, populated):
    thread = populated["thread"]
    response = staff_client.post(
        _change(thread),
        {**_thread_page_as_shown(thread), "title": "  Renamed   by   staff  "},
    )
    assert response.status_code == 302
    thread.refresh_from_db()
    assert thread.title == "Renamed by staff"
    assert LogEntry.objects.filter(object_id=str(thread.pk)).exists()


def test_thread_hard_delete_is_not_offered(staff_client, populated):
    thread = populated["thread"]
    response = staff_client.post(reverse("admin:workspace_thread_delete", args=[thread.pk]), {"post": "yes"})
    assert response.status_code == 403
    assert Thread.objects.filter(pk=thread.pk).exists()


def test_staff_cleans_up_expired_login_attempts_keeping_recent_ones(staff_client):
    from datetime import timedelta

    from axes.models import AccessAttempt
    from django.utils import timezone

    fields = {
        "ip_address": "127.0.0.1",
        "user_agent": "test",
        "http_accept": "*/*",
        "path_info": "/accounts/login/",
        "get_data": "",
        "post_data": "",
        "failures_since_start": 3,
    }
    old = AccessAttempt.objects.create(username="old", **fields)
    AccessAttempt.objects.filter(pk=old.pk).update(attempt_time=timezone.now() - timedelta(days=1))
    AccessAttempt.objects.create(username="recent", **fields)

    response = staff_client.post(
        reverse("admin:axes_accessattempt_changelist"),
        {"action": "cleanup_expired_attempts", "_selected_action": [old.pk]},
        follow=True,
    )

    assert response.status_code == 200
    assert "Cleaned up 1 expired access attempts." in response.content.decode()
    assert list(AccessAttempt.objects.values_list("username", flat=True)) == ["recent"]


def test_bulk_action_with_ids_no_row_could_have_selects_nothing(staff_client, populated):
    thread = populated["thread"]
    response = staff_client.post(
        reverse("admin:workspace_thread_changelist"),
        {"action": "soft_delete_selected", "_selected_action": ["²", "not-a-uuid"], "index": "0"},
        follow=True,
    )

    assert response.status_code == 200
    assert "Items must be selected in order to perform actions on them" in response.content.decode()
    thread.refresh_from_db()
    assert thread.deleted_at is None


def test_search_with_a_nul_character_is_refused_with_a_message(staff_client, populated):
    for url in (
        reverse("admin:workspace_thread_changelist") + "?q=a%00b",
        reverse("admin:autocomplete") + "?app_label=workspace&model_name=todo&field_name=thread&term=%00",
    ):
        response = staff_client.get(url)
        assert response.status_code == 400
        assert "cannot contain NUL characters" in response.content.decode()


# --- feedback -----------------------------------------------------------------------------


@pytest.fixture
def feedback_mix(populated, owner, other_user):
    """The populated thread's one entry ("useful", 4, helpfulness of turn 1)
    plus entries differing in scope, aspect, rating, thread, person and date."""
    from datetime import timedelta

    from django.utils import timezone

    from conversations.turns import slot

    thread = populated["thread"]
    plan_entry = conversation_services.feedback_leave(
        thread=thread, user=owner, turn_index=1, rating=2, scope="plan", aspect="tone", comment="plan-too-terse"
    )
    theirs = conversation_services.thread_create(owner=other_user, title="Other person's thread")
    turn, _ = slot.turn_begin(thread=theirs, user_message="hi")
    slot.turn_finish(thread=theirs, turn_index=turn)
    their_entry = conversation_services.feedback_leave(
        thread=theirs, user=other_user, turn_index=1, rating=5, aspect="correctness", comment="their-praise"
    )
    Feedback.objects.filter(pk=their_entry.pk).update(created_at=timezone.now() - timedelta(days=40))
    return {"useful": populated["feedback"], "plan": plan_entry, "theirs": their_entry, "their_thread": theirs}


@pytest.mark.parametrize(
    "query, shown",
    [
        ({"scope__exact": "plan"}, {"plan-too-terse"}),
        ({"aspect__exact": "correctness"}, {"their-praise"}),
        ({"rating__exact": "4"}, {"useful"}),
        ({"created_at__gte": "{recent}"}, {"useful", "plan-too-terse"}),
        ({"q": "praise"}, {"their-praise"}),
    ],
)
def test_feedback_changelist_filters_by_scope_aspect_rating_date_and_search(staff_client, feedback_mix, query, shown):
    from datetime import timedelta

    from django.utils import timezone

    recent = (timezone.now() - timedelta(days=7)).isoformat()
    query = {k: v.format(recent=recent) for k, v in query.items()}
    body = staff_client.get(_changelist(feedback_mix["useful"]), query).content.decode()
    assert {c for c in ("useful", "plan-too-terse", "their-praise") if c in body} == shown


def test_feedback_changelist_filters_by_thread_and_person(staff_client, feedback_mix, other_user, owner):
    url = _changelist(feedback_mix["useful"])
    by_thread = staff_client.get(url, {"thread__id__exact": str(feedback_mix["their_thread"].pk)}).content.decode()
    by_person = staff_client.get(url, {"user__id__exact": str(owner.pk)}).content.decode()
    assert "their-praise" in by_thread and "useful" not in by_thread
    assert "useful" in by_person and "plan-too-terse" in by_person and "their-praise" not in by_person
    # The filters offer each thread and person that has feedback.
    listing = staff_client.get(url).content.decode()
    assert "Other person&#x27;s thread" in listing and other_user.username in listing
    assert "The plan" in listing and "Tone" in listing


def test_feedback_is_read_only_in_the_admin(staff_client, feedback_mix):
    entry = feedback_mix["plan"]
    staff_client.post(_change(entry), {"rating": "5", "comment": "staff edit"})
    entry.refresh_from_db()
    assert (entry.rating, entry.comment) == (2, "plan-too-terse")


# --- the read-only review of a thread --------------------------------------------------------


def _review_url(thread):
    return reverse("admin:workspace_thread_review", args=[thread.pk])


def _content_main(html: str) -> str:
    return html[html.index('id="content-main"') : html.index('id="footer"')]


def test_staff_review_shows_transcript_beside_snapshots_branches_feedback_and_workspace(staff_client, populated):
    from conversations.models import Turn
    from tests.support.web import database_rows

    thread = populated["thread"]
    Turn.objects.filter(thread=thread, index=1).update(answer="The **review** is started.")
    before = database_rows()
    response = staff_client.get(_review_url(thread))
    after = database_rows()
    # Opening it only records that it was opened (test_staff_reads_of_a_threads_content_are_recorded).
    assert len(after.pop("conversations.ModerationAction")) == len(before.pop("conversations.ModerationAction")) + 1
    assert after == before, "opening the review changed the database"
    assert response.status_code == 200
    main = _content_main(response.content.decode())

    # The transcript: the person's message and the answer (sanitised markdown).
    assert "Start the review" in main and "The <strong>review</strong> is started." in main
    # Beside it, what the snapshot the turn started from held, linking to it in full.
    snapshot = main[main.index('aria-label="Snapshot at the start of turn 1"') :].split("</aside>", 1)[0]
    assert "<strong>Objective:</strong> Write a literature review" in snapshot
    assert "<strong>Preferences:</strong> 2 · <strong>Plan:</strong> 2 steps (0 done)" in snapshot
    assert "<strong>Document:</strong> Review (35 characters)" in snapshot
    assert f'<a href="{_change(populated["snapshot"])}">The snapshot in full</a>' in snapshot
    assert '"title"' not in main and "&quot;title&quot;" not in main
    # The branch family, feedback and moderation history.
    assert f'href="{_review_url(populated["branch"].thread)}"' in main and "from turn 1" in main
    assert "owner: The turn · Helpfulness · 4 of 5: useful" in main
    assert "Soft-deleted by" in main and "spam" in main
    # The workspace now, as the owner sees it: the document rendered, its script gone.
    assert "Write a literature review" in main and "Short paragraphs (soft)" in main
    assert "<h1>Review</h1>" in main and "<script>" not in main
    assert "Papers per year" in main
    # Nothing on the page writes.
    assert "<form" not in main


def _turns(thread, count):
    for n in range(count):
        turn, _ = slot.turn_begin(thread=thread, user_message=f"Message {n + 1}")
        slot.turn_finish(thread=thread, turn_index=turn, answer=f"Answer {n + 1}")


def _turns_shown(response) -> list[int]:
    return [int(n) for n in re.findall(r'<article class="review-turn" id="review-turn-(\d+)"', response.content.decode())]


def test_the_review_of_a_long_thread_shows_twenty_turns_at_a_time_newest_first(staff_client, thread):
    """A thread of 200 turns was one page of 9 MB (every snapshot in full), 821 queries."""
    _turns(thread, 45)
    url = _review_url(thread)

    first = staff_client.get(url)
    assert _turns_shown(first) == list(range(45, 25, -1))
    page = first.content.decode()
    assert "Turns 45 to 26 of 45, newest first." in page
    assert 'href="?page=2" rel="next">Older turns</a>' in page and "Newer turns" not in page

    second = staff_client.get(url + "?page=2").content.decode()
    assert 'href="?page=1" rel="prev">Newer turns</a>' in second and 'href="?page=3" rel="next">Older turns</a>' in second
    assert _turns_shown(staff_client.get(url + "?page=3")) == [5, 4, 3, 2, 1]
    assert "Older turns" not in staff_client.get(url + "?page=3").content.decode()
    # A page that is not one shows the nearest that is.
    assert _turns_shown(staff_client.get(url + "?page=99"))[0] == 5
    assert _turns_shown(staff_client.get(url + "?page=abc"))[0] == 45


@pytest.mark.parametrize("page", ["-5", "0", "9" * 40, "9" * 5000, "1.5", "", "%00", " 2 ", "1e3", "-0"])
def test_any_page_asked_of_the_review_shows_a_page_of_turns(staff_client, thread, page):
    _turns(thread, 25)
    response = staff_client.get(_review_url(thread), {"page": page})
    assert response.status_code == 200
    assert _turns_shown(response)


@pytest.mark.parametrize("count", [0, 1])
def test_the_review_of_a_thread_of_no_turn_or_one_has_no_older_or_newer_link(staff_client, thread, count):
    _turns(thread, count)
    for page in ("1", "2", "-1"):
        response = staff_client.get(_review_url(thread), {"page": page})
        assert _turns_shown(response) == ([1] if count else [])
        assert "Older turns" not in response.content.decode() and "Newer turns" not in response.content.decode()


def test_the_reviews_queries_do_not_grow_with_the_turns(staff_client, thread):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert staff_client.get(_review_url(thread)).status_code == 200
        return len(captured)

    _turns(thread, 20)
    few = queries()
    _turns(thread, 40)
    assert queries() == few


def test_a_branch_review_names_its_parent(staff_client, populated):
    main = _content_main(staff_client.get(_review_url(populated["branch"].thread)).content.decode())
    assert f'Branched from <a href="{_review_url(populated["thread"])}">Lit review</a> at turn 1' in main
    assert "No turns yet." in main


def test_the_thread_change_page_links_to_its_review(staff_client, populated):
    assert f'href="{_review_url(populated["thread"])}"' in staff_client.get(_change(populated["thread"])).content.decode()


def test_the_owner_who_is_not_staff_cannot_open_the_review(owner_client, client, populated):
    from tests.support.web import database_rows

    before = database_rows()
    for response in (owner_client.get(_review_url(populated["thread"])), owner_client.post(_review_url(populated["thread"]))):
        assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))
        assert "Start the review" not in response.content.decode()
    assert database_rows() == before


def test_the_review_takes_no_posts_and_a_missing_thread_is_a_404(staff_client, populated):
    import uuid

    from tests.support.web import database_rows

    before = database_rows()
    assert staff_client.post(_review_url(populated["thread"])).status_code == 405
    assert database_rows() == before
    assert staff_client.get(reverse("admin:workspace_thread_review", args=[uuid.uuid4()])).status_code == 404


def test_a_staff_rename_is_recorded_as_a_moderation_action(staff_client, staff, populated):
    thread = populated["thread"]
    response = staff_client.post(_change(thread), {**_thread_page_as_shown(thread), "title": "Renamed by staff"})
    assert response.status_code == 302
    action = ModerationAction.objects.filter(thread=thread, action=ModerationAction.Action.RENAME).get()
    assert (action.staff_user, action.detail) == (staff, "'Lit review' -> 'Renamed by staff'")
    assert Thread.objects.get(pk=thread.pk).title == "Renamed by staff"


def test_staff_see_the_people_a_thread_is_shared_with_and_their_changes_are_recorded(staff_client, staff, populated, other_user):
    thread = populated["thread"]
    sharing.thread_member_add(thread=thread, who=other_user.username, role="viewer", by=thread.owner)
    member = ThreadMember.objects.get(thread=thread)
    assert "Shared with" in staff_client.get(_change(thread)).content.decode()

    response = staff_client.post(_change(thread), _one_member_row(thread, member, user=other_user, role="editor"))

    assert response.status_code == 302
    assert ThreadMember.objects.get(pk=member.pk).role == "editor"
    action = ModerationAction.objects.get(thread=thread, action=ModerationAction.Action.SHARE)
    assert (action.staff_user, action.detail) == (staff, f"{other_user.username} made Editor")


def test_whom_a_shared_row_is_for_is_shown_not_offered_and_a_changed_user_is_not_taken(
    staff_client, staff, populated, other_user, django_user_model
):
    """Staff remove one person and add another as that: a row's user cannot
    be changed in place (it was saved as a role change and dropped, with
    "changed successfully")."""
    thread = populated["thread"]
    carol = django_user_model.objects.create_user(username="carol", password="pw-carol-123456")
    sharing.thread_member_add(thread=thread, who=other_user.username, role="viewer", by=thread.owner)
    member = ThreadMember.objects.get(thread=thread)
    page = staff_client.get(_change(thread)).content.decode()
    assert 'name="members-0-user"' in page and "disabled" in page.split('name="members-0-user"', 1)[1].split(">", 1)[0]

    staff_client.post(_change(thread), _one_member_row(thread, member, user=carol, role="viewer"))

    assert list(ThreadMember.objects.filter(thread=thread).values_list("user__username", flat=True)) == [other_user.username]
    assert (
        not ModerationAction.objects.filter(thread=thread, action=ModerationAction.Action.SHARE)
        .exclude(detail__startswith="Shared with")
        .exists()
    )


def test_staff_cannot_make_themselves_or_another_staff_account_a_member_in_the_admin(
    staff_client, staff, populated, django_user_model
):
    """Staff are not members (docs/adr/0084): they read a thread through the
    admin, on record, and cannot add themselves (or a colleague) as an
    editor through the "Shared with" rows."""
    thread = populated["thread"]
    colleague = django_user_model.objects.create_user(username="colleague", password="pw-123456", is_staff=True)
    for person in (staff, colleague):
        posted = {
            **_thread_page_as_shown(thread),
            "members-TOTAL_FORMS": "1",
            "members-0-thread": str(thread.pk),
            "members-0-user": str(person.pk),
            "members-0-role": "editor",
        }

        page = staff_client.post(_change(thread), posted, follow=True).content.decode()

        assert "Staff are not members of the threads they moderate" in page
    assert not ThreadMember.objects.filter(thread=thread).exists()
    assert not ModerationAction.objects.filter(thread=thread, action=ModerationAction.Action.SHARE).exists()


def _one_member_row(thread, member, *, user, role, shown_role=None) -> dict:
    """The thread's change form as posted with its one "Shared with" row,
    which showed `shown_role` (the row's role now, unless given)."""
    return {
        **_thread_page_as_shown(thread),
        "members-TOTAL_FORMS": "1",
        "members-INITIAL_FORMS": "1",
        "members-0-id": str(member.pk),
        "members-0-thread": str(thread.pk),
        "members-0-user": str(user.pk),
        "members-0-role": role,
        "members-0-was_role": shown_role or member.role,
    }


def _thread_page_as_shown(thread) -> dict:
    """The thread's change form as its page showed it, with no "Shared with" row."""
    return {
        "title": thread.title,
        "was_title": thread.title,
        **_empty_inline("moderation_actions"),
        **_empty_inline("members"),
    }


def _shown_on(page) -> dict:
    """What the thread's admin page carries of what it showed: its title, and each shared row's role."""
    form = page.context["adminform"].form
    shown = {"was_title": form["was_title"].value()}
    for formset in page.context["inline_admin_formsets"]:
        for row in formset.formset.initial_forms if formset.formset.prefix == "members" else ():
            shown[row.add_prefix("was_role")] = row["was_role"].value()
    return shown


def test_staff_saving_the_thread_page_keep_the_title_the_owner_set_meanwhile_and_are_told(staff_client, owner, populated):
    """The page's old title was put back, and recorded as a staff rename."""
    thread = populated["thread"]
    shown = _shown_on(staff_client.get(_change(thread)))
    assert shown == {"was_title": "Lit review"}
    conversation_services.thread_rename(thread=Thread.objects.get(pk=thread.pk), title="Owner's new title")

    response = staff_client.post(_change(thread), {**_thread_page_as_shown(thread), **shown}, follow=True)

    assert response.status_code == 200
    assert Thread.objects.get(pk=thread.pk).title == "Owner's new title"
    assert not ModerationAction.objects.filter(action=ModerationAction.Action.RENAME).exists()
    assert "Someone else renamed this thread meanwhile to “Owner&#x27;s new title”; that title was kept." in (
        response.content.decode()
    )


def test_staff_renaming_a_thread_the_owner_renamed_meanwhile_save_nothing_until_they_save_again(
    staff_client, staff, owner, populated
):
    thread = populated["thread"]
    shown = _shown_on(staff_client.get(_change(thread)))
    conversation_services.thread_rename(thread=Thread.objects.get(pk=thread.pk), title="Owner's new title")

    response = staff_client.post(_change(thread), {**_thread_page_as_shown(thread), **shown, "title": "Staff's title"})

    assert response.status_code == 200
    assert "Someone else renamed this thread meanwhile: it is “Owner&#x27;s new title” now. Nothing was saved" in (
        response.content.decode()
    )
    assert Thread.objects.get(pk=thread.pk).title == "Owner's new title"
    # The page's base moved: Save again replaces the owner's title knowingly, on record.
    again = _shown_on(response)
    assert again == {"was_title": "Owner's new title"}
    response = staff_client.post(_change(thread), {**_thread_page_as_shown(thread), **again, "title": "Staff's title"})
    assert response.status_code == 302
    assert Thread.objects.get(pk=thread.pk).title == "Staff's title"
    record = ModerationAction.objects.get(action=ModerationAction.Action.RENAME)
    assert (record.staff_user, record.detail) == (staff, "'Owner's new title' -> 'Staff's title'")


def test_a_thread_page_that_does_not_say_what_it_showed_saves_nothing(staff_client, populated):
    thread = populated["thread"]
    posted = {**_thread_page_as_shown(thread), "title": "Staff's title"}
    del posted["was_title"]
    response = staff_client.post(_change(thread), posted)
    assert response.status_code == 200
    assert "This page did not say what it showed; reload it and save again." in response.content.decode()
    assert Thread.objects.get(pk=thread.pk).title == "Lit review"


def test_staff_saving_the_thread_page_keep_a_role_the_owner_changed_meanwhile(staff_client, owner, populated, other_user):
    """Every row whose role differed from the database was saved, so the
    page's old role was put back on a row staff never touched."""
    thread = populated["thread"]
    sharing.thread_member_add(thread=thread, who=other_user.username, role="viewer", by=owner)
    member = ThreadMember.objects.get(thread=thread)
    shown = _shown_on(staff_client.get(_change(thread)))
    assert shown["members-0-was_role"] == "viewer"
    sharing.thread_member_set_role(thread=thread, member_id=member.pk, role="editor", by=owner)

    # Staff rename the thread; the row as the page showed it.
    posted = {**_one_member_row(thread, member, user=other_user, role="viewer"), **shown, "title": "Renamed by staff"}
    assert staff_client.post(_change(thread), posted).status_code == 302

    assert ThreadMember.objects.get(pk=member.pk).role == "editor"
    assert Thread.objects.get(pk=thread.pk).title == "Renamed by staff"
    assert not ModerationAction.objects.filter(action=ModerationAction.Action.SHARE).exists()


def test_staff_making_an_editor_a_viewer_after_the_owner_did_it_themselves_is_no_change(
    staff_client, owner, populated, other_user
):
    thread = populated["thread"]
    sharing.thread_member_add(thread=thread, who=other_user.username, role="editor", by=owner)
    member = ThreadMember.objects.get(thread=thread)
    shown = _shown_on(staff_client.get(_change(thread)))
    sharing.thread_member_set_role(thread=thread, member_id=member.pk, role="viewer", by=owner)
    posted = {**_one_member_row(thread, member, user=other_user, role="viewer"), **shown}
    assert staff_client.post(_change(thread), posted).status_code == 302
    assert ThreadMember.objects.get(pk=member.pk).role == "viewer"
    assert not ModerationAction.objects.filter(action=ModerationAction.Action.SHARE).exists()


def _empty_inline(prefix):
    return {f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"}


@pytest.mark.django_db(transaction=True)
async def test_the_review_transcript_reads_reasoning_steps_from_the_checkpointer(thread, staff, script, async_client):
    from conversations.turns import registry
    from tests.support.fake_model import Reply, tool_call

    script(
        Reply(tool_calls=[tool_call("add_todos", "Laying out the plan.", steps=[{"text": "Outline", "depth": 0}])]),
        Reply(text="I planned it: **one step**."),
    )
    await registry.start_turn(thread=thread, user_message="plan my essay")
    await registry.wait_for_turn(thread.pk)

    await async_client.aforce_login(staff)
    response = await async_client.get(_review_url(thread))
    main = _content_main(response.content.decode())
    turn = main[main.index('id="review-turn-1"') :]
    assert "plan my essay" in turn and "<strong>one step</strong>" in turn
    assert '<ol class="review-steps"><li>Laying out the plan.</li></ol>' in turn
    assert "add_todos" not in main
    # The plan the turn wrote is in the workspace now, not in the snapshot it started from.
    assert "1 Outline" in main[main.index('id="review-workspace"') :]
    assert "Outline" not in turn[turn.index("Snapshot at the start of turn 1") : turn.index("</aside>")]


# --- the activity log -----------------------------------------------------------


def _activity_rows(thread):
    conversation_services.activity_log(
        thread=thread,
        message="The model was busy; retried twice.",
        kind=ActivityLogEntry.Kind.RETRY,
        detail="HTTP 429: quota exceeded",
        turn_index=1,
    )
    conversation_services.activity_log(
        thread=thread,
        message="A step did not work: “Ticking step 9.”.",
        kind=ActivityLogEntry.Kind.TOOL_FAILURE,
        level="warning",
        detail="tool: toggle_todos",
        turn_index=2,
    )


def test_staff_filter_the_activity_log_by_kind_and_level_and_search_its_messages(staff_client, thread):
    _activity_rows(thread)
    listing = _changelist(ActivityLogEntry())
    by_kind = staff_client.get(listing, {"kind__exact": "retry"}).content.decode()
    assert "The model was busy" in by_kind and "Ticking step 9" not in by_kind
    by_level = staff_client.get(listing, {"level__exact": "warning"}).content.decode()
    assert "Ticking step 9" in by_level and "The model was busy" not in by_level
    found = staff_client.get(listing, {"q": "was busy"}).content.decode()
    assert "The model was busy" in found and "Ticking step 9" not in found
    # Not the detail (a failed turn's trace, docs/adr/0148): the entry's page shows it.
    assert "The model was busy" not in staff_client.get(listing, {"q": "quota exceeded"}).content.decode()


def test_an_entrys_page_shows_its_kind_and_detail(staff_client, thread):
    _activity_rows(thread)
    entry = ActivityLogEntry.objects.get(kind="retry")
    html = staff_client.get(_change(entry)).content.decode()
    assert "HTTP 429: quota exceeded" in html and "Retry" in html


def test_the_threads_admin_page_links_to_its_activity_log(staff_client, owner, thread):
    _activity_rows(thread)
    other = conversation_services.thread_create(owner=owner, title="Other")
    conversation_services.activity_log(thread=other, message="Elsewhere.")
    page = staff_client.get(_change(thread)).content.decode()
    link = f"{_changelist(ActivityLogEntry())}?thread__id__exact={thread.pk}"
    assert f'<a href="{link}">2 activity log entries' in page
    listing = staff_client.get(link).content.decode()
    assert "The model was busy" in listing and "Ticking step 9" in listing and "Elsewhere." not in listing


def test_the_activity_log_admin_is_refused_to_people_who_are_not_staff(owner_client, thread):
    _activity_rows(thread)
    entry = ActivityLogEntry.objects.get(kind="retry")
    for url in (_changelist(entry), _change(entry)):
        response = owner_client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_thread_admin_and_the_review_show_the_mode_of_each_turn(staff_client, populated):
    from conversations.models import Turn
    from conversations.turns import slot

    thread = populated["thread"]
    for message, mode in (("look around", "explore"), ("plan it", "plan"), ("and again", "plan")):
        turn, _ = slot.turn_begin(thread=Thread.objects.get(pk=thread.pk), user_message=message, mode=mode)
        slot.turn_finish(thread=thread, turn_index=turn)
    Thread.objects.filter(pk=thread.pk).update(mode="explore")
    assert list(Turn.objects.filter(thread=thread).order_by("index").values_list("mode", flat=True)) == [
        "execute",
        "explore",
        "plan",
        "plan",
    ]

    change = staff_client.get(_change(thread)).content.decode()
    assert re.search(r'<div class="readonly">Explore</div>', change)  # the thread's mode, for its next turns
    assert "turn 1: Execute; turn 2: Explore; turns 3–4: Plan" in change
    listing = staff_client.get(reverse("admin:workspace_thread_changelist") + "?mode__exact=plan").content.decode()
    assert "Lit review" not in listing
    listing = staff_client.get(reverse("admin:workspace_thread_changelist") + "?mode__exact=explore").content.decode()
    assert "Lit review" in listing

    main = _content_main(staff_client.get(_review_url(thread)).content.decode())
    modes = re.findall(r'id="review-turn-(\d+)".*?Mode: <strong>(\w+)</strong>', main, flags=re.DOTALL)
    assert modes == [("4", "Plan"), ("3", "Plan"), ("2", "Explore"), ("1", "Execute")]  # newest first


# --- staff reads are on record (docs/adr/0050) --------------------------------------------


def _revision(populated):
    return populated["document"].revisions.get()


STAFF_READS = [
    (
        lambda p: _review_url(p["thread"]),
        ModerationAction.Action.VIEW_REVIEW,
        "Opened the review: transcript, snapshots, feedback and workspace",
    ),
    (lambda p: _change(p["thread"]), ModerationAction.Action.VIEW_ADMIN, "Opened the thread's admin page"),
    (lambda p: _change(p["document"]), ModerationAction.Action.VIEW_ADMIN, "Opened the document and its list of versions"),
    (lambda p: _change(_revision(p)), ModerationAction.Action.VIEW_ADMIN, "Opened version 1 of the document"),
    (lambda p: _change(p["snapshot"]), ModerationAction.Action.VIEW_ADMIN, "Opened the snapshot of turn 1"),
    # Every other admin page of one row of a person's work (docs/adr/0129).
    (lambda p: _change(p["artifact"]), ModerationAction.Action.VIEW_ADMIN, "Opened the artifact 'Papers per year' (bar_chart)"),
    (lambda p: _change(p["objective"]), ModerationAction.Action.VIEW_ADMIN, "Opened the objective"),
    (
        lambda p: _change(p["objective"].thread.objective_revisions.get()),
        ModerationAction.Action.VIEW_ADMIN,
        "Opened a past value of the objective",
    ),
    (lambda p: _change(p["soft"]), ModerationAction.Action.VIEW_ADMIN, "Opened the preference 'Short paragraphs'"),
    (lambda p: _change(p["todo"]), ModerationAction.Action.VIEW_ADMIN, "Opened a step of the plan"),
    (lambda p: _change(p["plan_change"]), ModerationAction.Action.VIEW_ADMIN, "Opened an entry of the plan's history"),
    (lambda p: _change(p["feedback"]), ModerationAction.Action.VIEW_ADMIN, "Opened feedback on turn 1 by owner"),
    (lambda p: _change(p["activity"]), ModerationAction.Action.VIEW_ADMIN, "Opened activity log entry: model warned"),
    (
        lambda p: f"/threads/{p['thread'].pk}/staff-view/",
        ModerationAction.Action.VIEW_WORKSPACE,
        "Opened the read-only workspace view",
    ),
]


@pytest.mark.parametrize("url, action, detail", STAFF_READS)
def test_staff_reads_of_a_threads_content_are_recorded(staff_client, staff, populated, url, action, detail):
    thread = populated["thread"]
    before = ModerationAction.objects.count()
    assert staff_client.get(url(populated)).status_code == 200
    record = ModerationAction.objects.order_by("-pk").first()
    assert ModerationAction.objects.count() == before + 1
    assert (record.thread_id, record.staff_user, record.action, record.detail) == (thread.pk, staff, action, detail)
    # Listed in the thread's moderation history, where staff's changes are.
    assert escape(detail) in staff_client.get(_change(thread)).content.decode()


def _another_threads_content(owner):
    """A second thread with a plan step, a document and a turn's snapshot: lists of both threads' rows."""
    from workspace.services import document as document_services
    from workspace.services import plan as plan_services

    other = conversation_services.thread_create(owner=owner, title="Another thread")
    plan_services.todo_add(thread=other, text="Another step")
    document_services.document_save(thread=other, title="Another document", content="Other text")
    turn, _ = slot.turn_begin(thread=other, user_message="Another message")
    slot.turn_finish(thread=other, turn_index=turn)
    return other


def test_lists_of_many_threads_rows_and_refused_requests_record_nothing(
    staff_client, client, django_user_model, populated, owner
):
    _another_threads_content(owner)
    before = ModerationAction.objects.count()
    for model in ("thread", "document", "snapshot", "todo"):
        assert staff_client.get(_changelist(populated[model])).status_code == 200
    assert staff_client.post(_review_url(populated["thread"])).status_code == 405
    # Staff without the permission to view threads are refused, and nothing is recorded.
    client.force_login(django_user_model.objects.create_user(username="bare-staff", is_staff=True))
    for url, _action, _detail in STAFF_READS:
        assert client.get(url(populated)).status_code == 403
    assert ModerationAction.objects.count() == before


# A list narrowed to one thread shows its content as a page of one row does
# (docs/adr/0137): staff reading a thread's plan or its messages that way
# are on record, as on its pages.
def _reads():
    return ModerationAction.objects.filter(action=ModerationAction.Action.VIEW_ADMIN)


LISTS_OF_ONE_THREAD = [
    ("todo", lambda p: {"q": str(p["thread"].pk)}, "Listed its todos (searched for “{q}”)", "Collect sources"),
    ("snapshot", lambda p: {"q": str(p["thread"].pk)}, "Listed its workspace snapshots (searched for “{q}”)", None),
    ("document", lambda p: {"q": "Review"}, "Listed its documents (searched for “{q}”)", None),
    ("feedback", lambda p: {"thread__id__exact": str(p["thread"].pk)}, "Listed its feedback (filtered)", None),
    (
        "activity",
        lambda p: {"thread__id__exact": str(p["thread"].pk)},
        "Listed its activity log entries (filtered)",
        "model warned",
    ),
]


@pytest.mark.parametrize(("key", "query", "detail", "content"), LISTS_OF_ONE_THREAD, ids=[k for k, *_ in LISTS_OF_ONE_THREAD])
def test_a_list_searched_or_filtered_down_to_one_thread_is_a_recorded_read_of_it(
    staff_client, staff, populated, owner, key, query, detail, content
):
    thread = populated["thread"]
    other = _another_threads_content(owner)
    asked = query(populated)

    page = staff_client.get(_changelist(populated[key]), asked)

    assert page.status_code == 200
    if content is not None:
        assert content in page.content.decode()
    reads = list(_reads().values_list("thread_id", "staff_user", "detail"))
    assert reads == [(thread.pk, staff.pk, detail.format(q=asked.get("q")))]
    assert not ModerationAction.objects.filter(thread=other).exists()


def test_a_list_whose_page_is_all_one_threads_rows_is_a_read_of_it(staff_client, staff, populated, owner):
    """Unfiltered, but every row shown is one thread's (its plan fills the page): that thread's plan was read."""
    _another_threads_content(owner)
    assert staff_client.get(_changelist(populated["todo"])).status_code == 200
    assert not _reads().exists()  # both threads' steps on the page: browsing

    Todo.objects.exclude(thread=populated["thread"]).delete()
    staff_client.get(_changelist(populated["todo"]))

    assert list(_reads().values_list("thread_id", "detail")) == [(populated["thread"].pk, "Listed its todos (whole)")]


def test_the_document_list_does_not_search_the_texts_of_peoples_documents(staff_client, populated, owner):
    """A search of every document for a phrase told which thread holds it, unrecorded (the list shows no text)."""
    _another_threads_content(owner)
    page = staff_client.get(_changelist(populated["document"]), {"q": "alert(1)"}).content.decode()
    assert populated["thread"].title not in page
    assert not _reads().exists()


@pytest.mark.parametrize(
    "params",
    [{"o": "1"}, {"o": "-2"}, {"q": ""}, {"_facets": "True"}, {"all": ""}],
    ids=["sorted", "sorted-descending", "empty-search", "show-counts", "show-all"],
)
def test_a_whole_list_of_many_threads_rows_sorted_or_shown_in_full_records_nothing(staff_client, populated, owner, params):
    """A click on a column header, an empty search, "Show counts" or "Show all"
    picks no one: they wrote "Listed its todos (filtered)" into every shown
    thread's history."""
    other = _another_threads_content(owner)
    page = staff_client.get(_changelist(populated["todo"]), params)
    assert page.status_code == 200
    assert "Collect sources" in page.content.decode() and "Another step" in page.content.decode()
    assert not _reads().exists()
    assert not ModerationAction.objects.filter(thread=other).exists()


def test_a_list_sorted_and_searched_down_to_one_thread_is_still_a_recorded_read(staff_client, populated, owner):
    _another_threads_content(owner)
    asked = {"q": str(populated["thread"].pk), "o": "1"}
    assert staff_client.get(_changelist(populated["todo"]), asked).status_code == 200
    assert list(_reads().values_list("thread_id", "detail")) == [
        (populated["thread"].pk, f"Listed its todos (searched for “{asked['q']}”)")
    ]


def test_the_branch_list_does_not_search_the_reasons_people_gave_for_their_branches(staff_client, populated, owner):
    """The branch list searched each branch's reason (a person's own words) and
    its one hit told which thread holds a phrase, unrecorded: the gap closed
    for document text."""
    _another_threads_content(owner)
    BranchLink.objects.filter(pk=populated["branch"].pk).update(reason="merger with Acme, keep quiet")
    page = staff_client.get(_changelist(populated["branch"]), {"q": "merger with Acme"}).content.decode()
    assert "0 branch links" in page
    assert str(populated["branch"].thread_id) not in page
    assert not _reads().exists()
    # Titles and ids are searched as before.
    by_id = staff_client.get(_changelist(populated["branch"]), {"q": str(populated["branch"].thread_id)}).content.decode()
    assert _change(populated["branch"]) in by_id


def test_staff_opening_a_branch_link_and_its_reason_is_a_recorded_read_of_the_branch(staff_client, staff, populated):
    """The link's page shows the reason the person gave for the branch (their
    own words); it left no trace, unlike every other page of a thread's content."""
    link = populated["branch"]
    before = ModerationAction.objects.count()

    page = staff_client.get(_change(link))

    assert page.status_code == 200 and "try another angle" in page.content.decode()
    assert ModerationAction.objects.count() == before + 1
    record = ModerationAction.objects.order_by("-pk").first()
    detail = "Opened the link to the thread it branched from (turn 1) and its reason"
    assert (record.thread_id, record.staff_user, record.action, record.detail) == (
        link.thread_id,
        staff,
        ModerationAction.Action.VIEW_ADMIN,
        detail,
    )
    # Listed in the branch's moderation history, where staff's changes are.
    assert escape(detail) in staff_client.get(_change(link.thread)).content.decode()


@pytest.mark.parametrize(
    "query, how",
    [
        (lambda link: {"q": str(link.thread_id)}, "searched for “{q}”"),
        (lambda link: {"q": str(link.parent_id)}, "searched for “{q}”"),
        (lambda link: {"status__exact": "pending"}, "filtered"),
    ],
    ids=["searched-by-branch", "searched-by-parent", "filtered"],
)
def test_the_branch_list_searched_or_filtered_is_a_recorded_read_of_the_branches_it_shows(
    staff_client, staff, populated, owner, query, how
):
    link = populated["branch"]
    elsewhere = conversation_services.thread_create(owner=owner, title="Elsewhere")
    other = BranchLink.objects.create(
        thread=conversation_services.thread_create(owner=owner, title="Other fork"),
        parent=elsewhere,
        branch_point_turn=2,
        status=BranchLink.Status.ACTIVE,
    )
    asked = query(link)

    page = staff_client.get(_changelist(link), asked)

    assert page.status_code == 200 and _change(link) in page.content.decode()
    assert _change(other) not in page.content.decode()
    detail = f"Listed its branch links ({how.format(q=asked.get('q'))})"
    assert list(_reads().values_list("thread_id", "staff_user", "detail")) == [(link.thread_id, staff.pk, detail)]


def test_the_whole_branch_list_of_many_threads_records_nothing(staff_client, populated, owner):
    BranchLink.objects.create(
        thread=conversation_services.thread_create(owner=owner, title="Other fork"),
        parent=conversation_services.thread_create(owner=owner, title="Elsewhere"),
        branch_point_turn=2,
    )
    assert staff_client.get(_changelist(populated["branch"])).status_code == 200
    assert not _reads().exists()

"""Preferences panel: add, edit, delete, lock/unlock; hard before soft."""

import pytest

from tests.support.patches import only_patch
from tests.support.web import HTMX, answered_as_missing, ws_url
from workspace.models import Preference
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db


def add_pref(thread, title, kind="soft", subtitle="", locked=False):
    pref = preferences_services.preference_add(thread=thread, title=title, subtitle=subtitle, kind=kind, respect_lock=False)
    if locked:
        preferences_services.preference_set_locked(preference=pref, locked=True, respect_lock=False)
    return pref


def snapshot(thread):
    return list(Preference.objects.filter(thread=thread).order_by("pk").values_list("title", "subtitle", "kind", "locked"))


# --- panel ---------------------------------------------------------------------------


def test_panel_lists_hard_before_soft_and_marks_locked(owner_client, thread):
    add_pref(thread, "Short answers", kind="soft")
    add_pref(thread, "Cite peer-reviewed sources", kind="hard", locked=True)

    response = owner_client.get(ws_url(thread, "preferences/"), **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="panel-preferences"' in html and 'aria-label="Preferences"' in html
    assert html.index("Cite peer-reviewed sources") < html.index("Short answers")
    assert "Locked</span>" in html
    # The lock button says what pressing it does, in its text and its name.
    assert ">Unlock</button>" in html and ">Lock</button>" in html
    # Whose buttons they are is the row's toolbar's name (static/js/keyboard.js), not repeated on each one.
    assert "Unlock preference" not in html and "Lock preference" not in html
    rows = html.split('id="pref-list-hard"', 1)[1].split("<template", 1)[0]
    assert "<form" not in rows and "hx-post" not in rows and "/preferences/" not in rows


def test_panel_of_another_users_thread_is_404(other_client, thread):
    assert answered_as_missing(other_client.get(ws_url(thread, "preferences/"), **HTMX))


# --- add ------------------------------------------------------------------------------


def test_add_preference_persists_and_answers_with_its_row_in_place(owner_client, thread):
    first = add_pref(thread, "Cite sources", kind="hard")
    add_pref(thread, "Be brief", kind="soft")
    response = owner_client.post(
        ws_url(thread, "preferences/add/"),
        {"title": "Use UK spelling", "subtitle": "colour, not color", "kind": "hard"},
        **HTMX,
    )

    assert response.status_code == 200
    assert snapshot(thread)[-1] == ("Use UK spelling", "colour, not color", "hard", False)
    [row] = only_patch(response.content.decode(), "preferences").rows
    assert (row.text, _kind(row), row.after) == ("Use UK spelling", "hard", str(first.pk))
    assert "colour, not color" in response.content.decode()
    assert "haico:saved" in response["HX-Trigger"]


def test_add_preference_without_htmx_redirects_to_page(owner_client, thread):
    response = owner_client.post(ws_url(thread, "preferences/add/"), {"title": "Plain", "kind": "soft"})
    assert response.status_code == 302
    assert response["Location"] == ws_url(thread)
    assert snapshot(thread) == [("Plain", "", "soft", False)]


@pytest.mark.parametrize(
    "data, message",
    [
        ({"title": "  ", "kind": "soft"}, "Title cannot be empty."),
        ({"title": "t" * 201, "kind": "soft"}, "Title is too long (201 characters; the limit is 200)."),
        ({"title": "Fine", "subtitle": "s" * 501, "kind": "soft"}, "Subtitle is too long (501 characters; the limit is 500)."),
        ({"title": "Fine", "kind": "medium"}, "Kind must be &#x27;hard&#x27; or &#x27;soft&#x27;, not &#x27;medium&#x27;."),
    ],
)
def test_add_bad_preference_shows_error_keeps_input_and_adds_nothing(owner_client, thread, data, message):
    response = owner_client.post(ws_url(thread, "preferences/add/"), data, **HTMX)

    error = only_patch(response.content.decode(), "error")
    assert response.status_code == 200
    assert (error.attrs["data-panel"], error.attrs["data-target"]) == ("preferences", "add")
    assert error.text == message.replace("&#x27;", "'")
    assert "HX-Trigger" not in response  # the add form keeps what was typed
    assert snapshot(thread) == []


def test_add_bad_preference_without_htmx_is_400_with_the_input_kept(owner_client, thread):
    response = owner_client.post(ws_url(thread, "preferences/add/"), {"title": "t" * 201, "subtitle": "kept", "kind": "hard"})
    html = response.content.decode()
    assert response.status_code == 400 and "Title is too long" in html
    assert 'value="kept"' in html and 'value="hard" selected' in html
    assert snapshot(thread) == []


def test_add_refuses_get(owner_client, thread):
    assert owner_client.get(ws_url(thread, "preferences/add/")).status_code == 405


def test_add_to_another_users_thread_is_404(other_client, thread):
    response = other_client.post(ws_url(thread, "preferences/add/"), {"title": "Sneaky", "kind": "soft"}, **HTMX)
    assert answered_as_missing(response)
    assert snapshot(thread) == []


def test_add_requires_login(client, thread):
    response = client.post(ws_url(thread, "preferences/add/"), {"title": "Anon", "kind": "soft"})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert snapshot(thread) == []


# --- edit -----------------------------------------------------------------------------


def test_edit_preference_even_when_locked(owner_client, thread):
    pref = add_pref(thread, "Old title", locked=True)

    response = owner_client.post(
        ws_url(thread, f"preferences/{pref.pk}/edit/"),
        {"title": "New title", "subtitle": "now with detail", "kind": "hard"},
        **HTMX,
    )

    assert response.status_code == 200
    assert snapshot(thread) == [("New title", "now with detail", "hard", True)]
    [row] = only_patch(response.content.decode(), "preferences").rows
    assert (row.text, _kind(row), row.after) == ("New title", "hard", "")


def test_edit_with_empty_title_shows_error_in_that_row_and_changes_nothing(owner_client, thread):
    pref = add_pref(thread, "Keep this")

    response = owner_client.post(
        ws_url(thread, f"preferences/{pref.pk}/edit/"), {"title": "", "subtitle": "typed detail", "kind": "soft"}, **HTMX
    )

    error = only_patch(response.content.decode(), "error")
    assert response.status_code == 200
    # Shown in that row's open form, which keeps what the person typed.
    assert (error.attrs["data-target"], error.attrs["data-row"], error.text) == ("edit", str(pref.pk), "Title cannot be empty.")
    assert snapshot(thread) == [("Keep this", "", "soft", False)]


def test_edit_with_unknown_kind_changes_nothing(owner_client, thread):
    pref = add_pref(thread, "Stable", kind="hard")
    response = owner_client.post(ws_url(thread, f"preferences/{pref.pk}/edit/"), {"title": "Changed", "kind": "odd"}, **HTMX)
    assert "Kind must be" in response.content.decode()
    assert snapshot(thread) == [("Stable", "", "hard", False)]


def test_edit_refuses_get(owner_client, thread):
    pref = add_pref(thread, "P")
    assert owner_client.get(ws_url(thread, f"preferences/{pref.pk}/edit/")).status_code == 405


def test_edit_of_another_users_preference_is_404(other_client, thread):
    pref = add_pref(thread, "Theirs")
    response = other_client.post(ws_url(thread, f"preferences/{pref.pk}/edit/"), {"title": "Mine"}, **HTMX)
    assert answered_as_missing(response)
    assert snapshot(thread) == [("Theirs", "", "soft", False)]


def test_preference_id_from_another_thread_is_404(owner_client, owner, thread):
    from conversations.services import thread_create

    other_thread = thread_create(owner=owner, title="Other")
    pref = add_pref(other_thread, "Elsewhere")
    response = owner_client.post(ws_url(thread, f"preferences/{pref.pk}/edit/"), {"title": "Moved"}, **HTMX)
    assert answered_as_missing(response)
    assert snapshot(other_thread) == [("Elsewhere", "", "soft", False)]


def test_unknown_preference_id_is_404(owner_client, thread):
    assert answered_as_missing(owner_client.post(ws_url(thread, "preferences/999999/edit/"), {"title": "x"}, **HTMX))


def test_edit_requires_login(client, thread):
    pref = add_pref(thread, "P")
    response = client.post(ws_url(thread, f"preferences/{pref.pk}/edit/"), {"title": "Anon"})
    assert response.status_code == 302
    assert snapshot(thread) == [("P", "", "soft", False)]


# --- delete ---------------------------------------------------------------------------


def test_delete_preference_even_when_locked(owner_client, thread):
    keep = add_pref(thread, "Keep")
    doomed = add_pref(thread, "Doomed", locked=True)

    response = owner_client.post(ws_url(thread, f"preferences/{doomed.pk}/delete/"), **HTMX)

    assert response.status_code == 200
    assert list(Preference.objects.filter(thread=thread)) == [keep]
    patch = only_patch(response.content.decode(), "preferences")
    assert (patch.removed, patch.rows) == ([str(doomed.pk)], [])


def test_delete_refuses_get(owner_client, thread):
    pref = add_pref(thread, "P")
    assert owner_client.get(ws_url(thread, f"preferences/{pref.pk}/delete/")).status_code == 405
    assert Preference.objects.filter(pk=pref.pk).exists()


def test_delete_of_another_users_preference_is_404(other_client, thread):
    pref = add_pref(thread, "Theirs")
    assert answered_as_missing(other_client.post(ws_url(thread, f"preferences/{pref.pk}/delete/"), **HTMX))
    assert Preference.objects.filter(pk=pref.pk).exists()


def test_delete_requires_login(client, thread):
    pref = add_pref(thread, "P")
    assert client.post(ws_url(thread, f"preferences/{pref.pk}/delete/")).status_code == 302
    assert Preference.objects.filter(pk=pref.pk).exists()


# --- lock / unlock ----------------------------------------------------------------------


def test_lock_then_unlock(owner_client, thread):
    pref = add_pref(thread, "Lockable")

    locked = owner_client.post(ws_url(thread, f"preferences/{pref.pk}/lock/"), {"locked": "1"}, **HTMX)
    pref.refresh_from_db()
    assert locked.status_code == 200 and pref.locked
    assert "Locked</span>" in locked.content.decode()
    assert 'data-pref-act="lock" data-locked>' in locked.content.decode() and ">Unlock</button>" in locked.content.decode()

    unlocked = owner_client.post(ws_url(thread, f"preferences/{pref.pk}/lock/"), {"locked": "0"}, **HTMX)
    pref.refresh_from_db()
    assert unlocked.status_code == 200 and not pref.locked
    assert "Locked</span>" not in unlocked.content.decode()


@pytest.mark.parametrize("data", [{}, {"locked": "maybe"}])
def test_lock_with_missing_or_bad_flag_shows_error_and_changes_nothing(owner_client, thread, data):
    pref = add_pref(thread, "Steady")
    response = owner_client.post(ws_url(thread, f"preferences/{pref.pk}/lock/"), data, **HTMX)
    assert response.status_code == 200
    assert "Say whether to lock the preference" in only_patch(response.content.decode(), "error").text
    pref.refresh_from_db()
    assert not pref.locked


def test_lock_refuses_get(owner_client, thread):
    pref = add_pref(thread, "P")
    assert owner_client.get(ws_url(thread, f"preferences/{pref.pk}/lock/")).status_code == 405


def test_lock_of_another_users_preference_is_404(other_client, thread):
    pref = add_pref(thread, "Theirs")
    assert answered_as_missing(other_client.post(ws_url(thread, f"preferences/{pref.pk}/lock/"), {"locked": "1"}, **HTMX))
    pref.refresh_from_db()
    assert not pref.locked


def test_lock_requires_login(client, thread):
    pref = add_pref(thread, "P")
    assert client.post(ws_url(thread, f"preferences/{pref.pk}/lock/"), {"locked": "1"}).status_code == 302
    pref.refresh_from_db()
    assert not pref.locked


def test_a_kind_change_moves_the_row_to_the_end_of_the_other_list(owner_client, thread):
    hard = add_pref(thread, "Hard one", kind="hard")
    soft = add_pref(thread, "Soft one")
    response = owner_client.post(ws_url(thread, f"preferences/{soft.pk}/edit/"), {"kind": "hard"}, **HTMX)
    [row] = only_patch(response.content.decode(), "preferences").rows
    assert (_kind(row), row.after) == ("hard", str(hard.pk))


def _kind(row) -> str:
    """A preference row's kind, as the page reads it: its pref-hard / pref-soft class."""
    return "hard" if "pref-hard" in row.attrs["class"].split() else "soft"

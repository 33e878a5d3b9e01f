"""A form saves over only what its person saw (docs/adr/0125).

Two editors of one thread, the owner and another editor, each in their
own session. The other editor's page was rendered (and their form filled
from it), then the owner saved a change, then the other editor submits the
form they had open, carrying the value it was filled with (`was`, as
static/js builds it). Nothing the owner saved is replaced without a word:
the other editor is told what it says now, their text stays in the form
with the base moved to the current value, and saving again replaces it
deliberately. At size: a plan of 300 steps, 100 preferences."""

import pytest
from django.test import Client

from conversations import sharing
from tests.support.patches import read_patches
from tests.support.web import HTMX, ws_url
from workspace.models import Objective, PlanChange, Preference, Todo
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db

ANNS_STEP = "Ask finance for the Q3 numbers (agreed with the CFO)"


@pytest.fixture
def editor(django_user_model):
    return django_user_model.objects.create_user(username="ben", password="x")


@pytest.fixture
def two(thread, owner, editor):
    """The owner's and the other editor's sessions."""
    sharing.thread_member_add(thread=thread, who="ben", role="editor", by=owner)
    mine, theirs = Client(), Client()
    mine.force_login(owner)
    theirs.force_login(editor)
    return mine, theirs


def big_plan(thread, n=300):
    """n steps: groups of a top step, two sub-steps and a sub-sub-step."""
    plan_services.todos_add_outline(thread=thread, steps=[{"text": f"Step {i}", "depth": (0, 1, 2, 1)[i % 4]} for i in range(n)])
    return list(Todo.objects.filter(thread=thread).order_by("position"))


def shown(reply) -> str:
    """What the person is shown: the answer's text (refusals are in its patches)."""
    return reply.content.decode()


def error_patch(reply):
    errors = [p for p in read_patches(shown(reply)) if p.kind == "error"]
    assert len(errors) == 1, shown(reply)
    return errors[0]


# --- a step's text ----------------------------------------------------------------


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_a_stale_step_rename_is_refused_and_keeps_both_texts(thread, two, htmx):
    mine, theirs = two
    step = big_plan(thread)[157]
    url = ws_url(thread, f"plan/{step.pk}/edit/")
    headers = HTMX if htmx else {}
    assert mine.post(url, {"text": ANNS_STEP, "was": "Step 157"}, **HTMX).status_code == 200

    reply = theirs.post(url, {"text": "Step 157 – tidy", "was": "Step 157"}, **headers)

    assert Todo.objects.get(pk=step.pk).text == ANNS_STEP
    assert PlanChange.objects.filter(summary__contains="tidy").count() == 0
    body = shown(reply)
    assert "Someone else changed this step meanwhile" in body and ANNS_STEP in body
    if htmx:
        assert reply.status_code == 200
        error = error_patch(reply)
        assert error.attrs["data-target"] == "edit" and error.attrs["data-row"] == str(step.pk)
        assert error.attrs["data-base-was"] == ANNS_STEP  # the open form's base moves to what it says now
    else:
        assert reply.status_code == 400
        # The form comes back with the typed text and the current text as its base.
        assert 'value="Step 157 – tidy"' in body
        assert f'name="was" value="{ANNS_STEP}"' in body
    # Saving again from the new base replaces it, deliberately.
    again = theirs.post(url, {"text": "Step 157 – tidy", "was": ANNS_STEP}, **headers)
    assert again.status_code in (200, 302)
    assert Todo.objects.get(pk=step.pk).text == "Step 157 – tidy"
    # The owner's page shows the step as stored.
    assert "Step 157 – tidy" in mine.get(ws_url(thread)).content.decode()


def test_a_rename_to_what_it_already_says_or_from_the_current_text_saves(thread, two):
    mine, theirs = two
    step = big_plan(thread)[10]
    url = ws_url(thread, f"plan/{step.pk}/edit/")
    mine.post(url, {"text": "Both agree", "was": "Step 10"}, **HTMX)
    reply = theirs.post(url, {"text": "Both agree", "was": "Step 10"}, **HTMX)
    assert reply.get("HX-Trigger") and "haico:saved" in reply["HX-Trigger"]
    assert Todo.objects.get(pk=step.pk).text == "Both agree"


def test_a_rename_without_the_base_saves_as_before(thread, two):
    mine, theirs = two
    step = big_plan(thread)[3]
    url = ws_url(thread, f"plan/{step.pk}/edit/")
    mine.post(url, {"text": "Owner's", "was": "Step 3"}, **HTMX)
    theirs.post(url, {"text": "Old page's"}, **HTMX)
    assert Todo.objects.get(pk=step.pk).text == "Old page's"


@pytest.mark.parametrize("was", ["x" * 1001, "bad\x00text"])
def test_a_bad_base_is_a_clear_error_not_a_500(thread, two, was):
    _mine, theirs = two
    step = big_plan(thread, n=4)[1]
    reply = theirs.post(ws_url(thread, f"plan/{step.pk}/edit/"), {"text": "New", "was": was}, **HTMX)
    assert reply.status_code == 200
    assert "your page showed" in error_patch(reply).text
    assert Todo.objects.get(pk=step.pk).text == "Step 1"


# --- a preference ------------------------------------------------------------------


def preferences(thread, n=100):
    for i in range(n):
        preference_services.preference_add(
            thread=thread, title=f"Rule {i}", subtitle="", kind="hard" if i % 3 == 0 else "soft", respect_lock=False
        )
    return Preference.objects.get(thread=thread, title="Rule 42")


SHOWN_42 = {"was_title": "Rule 42", "was_subtitle": "", "was_kind": "hard"}


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_a_stale_preference_edit_keeps_the_other_editors_rewording(thread, two, htmx):
    mine, theirs = two
    pref = preferences(thread)
    url = ws_url(thread, f"preferences/{pref.pk}/edit/")
    headers = HTMX if htmx else {}
    mine.post(
        url, {"title": "Rule 42: cite primary sources only", "subtitle": "Agreed with legal", "kind": "hard", **SHOWN_42}, **HTMX
    )

    reply = theirs.post(url, {"title": "Rule 42.", "subtitle": "", "kind": "hard", **SHOWN_42}, **headers)

    after = Preference.objects.get(pk=pref.pk)
    assert (after.title, after.subtitle, after.kind) == ("Rule 42: cite primary sources only", "Agreed with legal", "hard")
    body = shown(reply)
    assert (
        "Someone else changed this preference meanwhile" in body
        and "Agreed with legal" in body
        and "cite primary sources only" in body
    )
    if htmx:
        error = error_patch(reply)
        assert error.attrs["data-target"] == "edit" and error.attrs["data-row"] == str(pref.pk)
        assert error.attrs["data-base-was_title"] == "Rule 42: cite primary sources only"
        assert error.attrs["data-base-was_subtitle"] == "Agreed with legal"
        assert error.attrs["data-base-was_kind"] == "hard"
    else:
        assert reply.status_code == 400
        assert 'value="Rule 42."' in body
        assert 'name="was_subtitle" value="Agreed with legal"' in body
    again = {"was_title": after.title, "was_subtitle": after.subtitle, "was_kind": after.kind}
    theirs.post(url, {"title": "Rule 42.", "subtitle": "", "kind": "hard", **again}, **headers)
    assert Preference.objects.get(pk=pref.pk).title == "Rule 42."


def test_a_preference_base_with_a_bad_kind_is_a_clear_error(thread, two):
    _mine, theirs = two
    pref = preferences(thread, n=50)
    url = ws_url(thread, f"preferences/{pref.pk}/edit/")
    reply = theirs.post(url, {"title": "T", **SHOWN_42, "was_kind": "medium"}, **HTMX)
    assert "your page showed" in error_patch(reply).text
    assert Preference.objects.get(pk=pref.pk).title == "Rule 42"


# --- the objective -----------------------------------------------------------------

ANNS_OBJECTIVE = "Write a literature review of RCTs since 2015, max 20 pages"


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_a_stale_objective_edit_is_refused_and_names_who_wrote_it(thread, two, htmx):
    mine, theirs = two
    objective_services.objective_set(thread=thread, text="Write a literature review")
    url = ws_url(thread, "objective/edit/")
    headers = HTMX if htmx else {}
    mine.post(url, {"text": ANNS_OBJECTIVE, "was": "Write a literature review"}, **HTMX)

    reply = theirs.post(url, {"text": "Write a literature review.", "was": "Write a literature review"}, **headers)

    assert Objective.objects.get(thread=thread).text == ANNS_OBJECTIVE
    body = shown(reply)
    assert reply.status_code == (200 if htmx else 400)
    assert "owner changed the objective" in body and ANNS_OBJECTIVE in body
    assert ">Write a literature review.</textarea>" in body  # what they typed, still in the form
    assert f'name="was" value="{ANNS_OBJECTIVE}"' in body
    theirs.post(url, {"text": "Write a literature review.", "was": ANNS_OBJECTIVE}, **headers)
    assert Objective.objects.get(thread=thread).text == "Write a literature review."


def test_an_objective_set_for_the_first_time_meanwhile_is_kept(thread, two):
    mine, theirs = two
    url = ws_url(thread, "objective/edit/")
    mine.post(url, {"text": ANNS_OBJECTIVE, "was": ""}, **HTMX)
    reply = theirs.post(url, {"text": "Mine", "was": ""}, **HTMX)
    assert Objective.objects.get(thread=thread).text == ANNS_OBJECTIVE
    assert ANNS_OBJECTIVE in shown(reply)


# --- rearranging --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "row", "number", "post"),
    [
        ("indent", 8, "3", {}),
        ("outdent", 9, "3.1", {}),
        ("move", 8, "3", {"direction": "up"}),
        ("move", 8, "3", {"direction": "down"}),
    ],
)
def test_a_second_rearrange_from_the_same_view_is_refused(thread, two, action, row, number, post):
    mine, theirs = two
    step = big_plan(thread)[row]
    url = ws_url(thread, f"plan/{step.pk}/{action}/")
    assert mine.post(url, {**post, "number": number}, **HTMX).status_code == 200
    moved = Todo.objects.get(pk=step.pk)
    layout = list(Todo.objects.filter(thread=thread).order_by("position").values_list("pk", "depth"))

    reply = theirs.post(url, {**post, "number": number}, **HTMX)

    assert list(Todo.objects.filter(thread=thread).order_by("position").values_list("pk", "depth")) == layout
    assert (Todo.objects.get(pk=step.pk).depth, Todo.objects.get(pk=step.pk).position) == (moved.depth, moved.position)
    assert f"“Step {row}” was moved by someone else meanwhile; the plan shows it as it is now" in error_patch(reply).text
    plan = [p for p in read_patches(shown(reply)) if p.kind == "plan"]
    assert plan and plan[0].attrs.get("data-complete") == "1"  # the fresh plan


def test_both_pressing_indent_on_step_8_leaves_it_one_level_deep(thread, two):
    mine, theirs = two
    step = big_plan(thread)[8]
    url = ws_url(thread, f"plan/{step.pk}/indent/")
    mine.post(url, {"number": "3"}, **HTMX)
    plain = theirs.post(url, {"number": "3"})
    assert Todo.objects.get(pk=step.pk).depth == 1
    assert plain.status_code == 400 and "moved by someone else meanwhile" in shown(plain)


def test_a_rearrange_without_the_number_works_as_before_and_a_bad_one_is_refused(thread, two):
    _mine, theirs = two
    step = big_plan(thread, n=12)[8]
    url = ws_url(thread, f"plan/{step.pk}/indent/")
    reply = theirs.post(url, {"number": "three"}, **HTMX)
    assert "as your page showed" in error_patch(reply).text
    assert Todo.objects.get(pk=step.pk).depth == 0
    theirs.post(url, {}, **HTMX)
    assert Todo.objects.get(pk=step.pk).depth == 1


# --- what a page hands back ---------------------------------------------------------


def test_rows_written_with_windows_line_breaks_save_from_the_forms_their_page_filled(thread, two):
    """The agent or a client on Windows wrote "\\r\\n"; the page's HTML reads
    it as "\\n", so the form's base says "\\n": that is the row as shown, not
    a change someone made."""
    mine, _theirs = two
    plan_services.todos_add_outline(thread=thread, steps=[{"text": "Check figures\r\nthen send", "depth": 0}])
    step = Todo.objects.get(thread=thread)
    objective_services.objective_set(thread=thread, text="Ship it\r\nby Friday", author="agent")
    preference_services.preferences_add(
        thread=thread, items=[{"title": "Sources", "subtitle": "Peer reviewed\r\nonly", "kind": "hard"}], respect_lock=False
    )
    preference = Preference.objects.get(thread=thread)

    mine.post(
        ws_url(thread, f"plan/{step.pk}/edit/"), {"text": "Check figures, then send", "was": "Check figures\nthen send"}, **HTMX
    )
    mine.post(ws_url(thread, "objective/edit/"), {"text": "Ship it by Friday", "was": "Ship it\nby Friday"}, **HTMX)
    mine.post(
        ws_url(thread, f"preferences/{preference.pk}/edit/"),
        {
            "title": "Sources",
            "subtitle": "Peer reviewed only",
            "kind": "hard",
            "was_title": "Sources",
            "was_subtitle": "Peer reviewed\nonly",
            "was_kind": "hard",
        },
        **HTMX,
    )

    assert Todo.objects.get(pk=step.pk).text == "Check figures, then send"
    assert Objective.objects.get(thread=thread).text == "Ship it by Friday"
    assert Preference.objects.get(pk=preference.pk).subtitle == "Peer reviewed only"


def test_a_new_title_keeps_the_line_breaks_of_a_detail_the_one_line_field_dropped(thread, two):
    mine, _theirs = two
    preference_services.preferences_add(
        thread=thread,
        items=[{"title": "Sources", "subtitle": "Peer-reviewed only\nNo blogs", "kind": "soft"}],
        respect_lock=False,
    )
    preference = Preference.objects.get(thread=thread)
    # The one-line Detail field hands the detail back without its line break.
    form = {"title": "Sources we cite", "subtitle": "Peer-reviewed onlyNo blogs", "kind": "soft"}
    mine.post(
        ws_url(thread, f"preferences/{preference.pk}/edit/"),
        {**form, "was_title": "Sources", "was_subtitle": "Peer-reviewed only\nNo blogs", "was_kind": "soft"},
        **HTMX,
    )
    preference.refresh_from_db()
    assert (preference.title, preference.subtitle) == ("Sources we cite", "Peer-reviewed only\nNo blogs")
    # A detail the person did change is theirs, on one line.
    mine.post(ws_url(thread, f"preferences/{preference.pk}/edit/"), {**form, "subtitle": "Peer-reviewed, no blogs"}, **HTMX)
    assert Preference.objects.get(pk=preference.pk).subtitle == "Peer-reviewed, no blogs"


# --- a drag -------------------------------------------------------------------------
# big_plan numbers row 4k "k+1", 4k+1 "k+1.1", 4k+2 "k+1.1.1" and 4k+3 "k+1.2".


def layout(thread):
    return list(Todo.objects.filter(thread=thread).order_by("position").values_list("pk", "depth"))


def drag(client, thread, step, values, **headers):
    return client.post(ws_url(thread, f"plan/{step.pk}/place/"), values, **headers)


# What the owner did meanwhile (rows of a 300-step plan), and the other
# editor's drop as their page showed it: the dragged row, the row it was
# dropped before (None: the end of the plan), and the numbers sent.
STALE_DRAGS = {
    # The step it was dropped before went up one: the drop would land a place higher.
    "before-moved": ("move", 160, {"direction": "up", "number": "41"}, 200, 160, ("51", "41"), "“Step 160” was moved"),
    # The dragged step itself went up.
    "dragged-moved": ("move", 200, {"direction": "up", "number": "51"}, 200, 160, ("51", "41"), "“Step 200” was moved"),
    # Steps above both were removed: every number below them changed.
    "removed-above": ("delete", 0, {}, 200, 160, ("51", "41"), "“Step 200” was moved"),
    # Dropped at the end of its level (before 51); 51 was indented into that level since.
    "level-grew": ("indent", 200, {"number": "51"}, 197, 200, ("50.1", ""), "The steps at the level of “Step 197”"),
    # The step it was dropped before is gone.
    "before-removed": ("delete", 160, {}, 200, 160, ("51", "41"), "“Step 200” was dropped before was removed"),
}


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
@pytest.mark.parametrize("case", list(STALE_DRAGS))
def test_a_drag_on_a_plan_changed_meanwhile_moves_nothing_and_shows_the_plan_as_it_is(thread, two, case, htmx):
    mine, theirs = two
    action, changed_row, change, row, before_row, (number, before_number), said = STALE_DRAGS[case]
    todos = big_plan(thread)
    assert mine.post(ws_url(thread, f"plan/{todos[changed_row].pk}/{action}/"), change, **HTMX).status_code == 200
    now = layout(thread)
    history = PlanChange.objects.count()

    values = {"before": str(todos[before_row].pk), "number": number, "before_number": before_number}
    reply = drag(theirs, thread, todos[row], values, **(HTMX if htmx else {}))

    assert layout(thread) == now
    assert PlanChange.objects.count() == history
    assert said in shown(reply) and "the plan shows" in shown(reply)
    if htmx:
        assert reply.status_code == 200
        assert "meanwhile" in error_patch(reply).text
        plan = [p for p in read_patches(shown(reply)) if p.kind == "plan"]
        assert plan and plan[0].attrs.get("data-complete") == "1"  # the plan as it is now
    else:
        assert reply.status_code == 400


@pytest.mark.parametrize(
    ("row", "before_row", "number", "before_number", "lands"),
    [
        (200, 160, "51", "41", (160, 0)),  # up the top level, before 41
        (197, 200, "50.1", "", (198, 1)),  # to the end of its level, past 50.2
        (292, None, "74", "", (296, 0)),  # to the end of the plan
    ],
    ids=["before-a-step", "end-of-its-level", "end-of-the-plan"],
)
def test_a_drag_on_the_plan_as_it_is_moves_the_step(thread, two, row, before_row, number, before_number, lands):
    _mine, theirs = two
    todos = big_plan(thread)
    before = "" if before_row is None else str(todos[before_row].pk)
    reply = drag(theirs, thread, todos[row], {"before": before, "number": number, "before_number": before_number}, **HTMX)
    assert "haico:saved" in reply["HX-Trigger"]
    moved = Todo.objects.get(pk=todos[row].pk)
    assert (moved.position, moved.depth) == lands


def test_a_drag_without_the_numbers_is_placed_as_before(thread, two):
    mine, theirs = two
    todos = big_plan(thread)
    mine.post(ws_url(thread, f"plan/{todos[160].pk}/move/"), {"direction": "up", "number": "41"}, **HTMX)
    reply = drag(theirs, thread, todos[200], {"before": str(todos[160].pk)}, **HTMX)
    assert "haico:saved" in reply["HX-Trigger"]
    # Before step 160, wherever it is now: an old page's drop, as it always was.
    assert Todo.objects.get(pk=todos[200].pk).position == Todo.objects.get(pk=todos[160].pk).position - 4


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"number": "fifty-one", "before_number": "41"}, "as your page showed it must be an outline number"),
        ({"number": "51", "before_number": "4 1"}, "must be an outline number such as 2.1, or empty"),
        ({"number": "51", "before_number": "41\x00"}, "must be an outline number such as 2.1, or empty"),
        ({"number": "51", "before_number": "1." * 40 + "1"}, "must be an outline number such as 2.1, or empty"),
        ({"number": "51"}, "Send both numbers your page showed for a drag"),
        ({"before_number": "41"}, "Send both numbers your page showed for a drag"),
        ({"number": "51", "before_number": "41", "before": ""}, "or empty when it was dropped at the end of its level"),
    ],
    ids=["number", "before-number", "nul", "too-deep", "number-only", "before-number-only", "end-with-a-number"],
)
def test_a_drag_with_bad_numbers_is_a_clear_error_not_a_500(thread, two, values, said, htmx):
    _mine, theirs = two
    todos = big_plan(thread)
    before = layout(thread)
    reply = drag(theirs, thread, todos[200], {"before": str(todos[160].pk), **values}, **(HTMX if htmx else {}))
    assert reply.status_code == (200 if htmx else 400)
    assert said in (error_patch(reply).text if htmx else shown(reply))
    assert layout(thread) == before

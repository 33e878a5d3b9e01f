"""Plan panel: the todo tree and its read-only checklist view."""

import pytest

from conversations.services import thread_create
from tests.support.patches import only_patch, read_patches
from tests.support.web import HTMX, answered_as_missing, ws_url
from workspace.models import Todo
from workspace.services import plan as plan_services

pytestmark = pytest.mark.django_db


def outline(thread):
    """The plan as (depth, text, done) in pre-order: what the tree view shows."""
    return list(Todo.objects.filter(thread=thread).order_by("position").values_list("depth", "text", "done"))


@pytest.fixture
def plan(thread):
    """1 Gather / 1.1 Search / 1.2 Screen / 2 Write."""
    gather = plan_services.todo_add(thread=thread, text="Gather")
    search = plan_services.todo_add(thread=thread, text="Search", parent=gather)
    screen = plan_services.todo_add(thread=thread, text="Screen", parent=gather)
    write = plan_services.todo_add(thread=thread, text="Write")
    return {"gather": gather, "search": search, "screen": screen, "write": write}


ORIGINAL = [(0, "Gather", False), (1, "Search", False), (1, "Screen", False), (0, "Write", False)]


def step_url(thread, todo, action):
    return ws_url(thread, f"plan/{todo.pk}/{action}/")


# --- panel ------------------------------------------------------------------------------


def _rows_markup(html):
    return html.split('id="plan-steps"', 1)[1].split("</ol>", 1)[0]


def test_plan_panel_shows_outline_numbers_and_rows_without_forms_or_urls(owner_client, thread, plan):
    response = owner_client.get(ws_url(thread, "plan/"), **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="panel-plan"' in html
    for number in ("1", "1.1", "1.2", "2"):
        assert f'<span class="step-number">{number}</span>' in html
    rows = _rows_markup(html)
    # One delegated handler per panel: rows carry ids, never forms or URLs.
    assert "<form" not in rows and "hx-post" not in rows and "/plan/" not in rows
    assert f'id="step-{plan["search"].pk}"' in rows
    assert 'aria-label="Actions for step 1.2"' in rows and 'aria-label="Done: step 1.1"' in rows
    assert html.count('role="menu"') == 1 and html.count('data-step-form="edit"') == 1


def test_empty_plan_says_so(owner_client, thread):
    html = owner_client.get(ws_url(thread, "plan/"), **HTMX).content.decode()
    assert "No plan yet" in html


def test_plan_panel_of_another_users_thread_is_404(other_client, thread):
    assert answered_as_missing(other_client.get(ws_url(thread, "plan/"), **HTMX))


# --- add --------------------------------------------------------------------------------


def test_add_step_answers_with_the_new_row_in_its_place(owner_client, thread, plan):
    response = owner_client.post(ws_url(thread, "plan/add/"), {"text": "Review"}, **HTMX)

    assert response.status_code == 200
    assert outline(thread) == [*ORIGINAL, (0, "Review", False)]
    patch = only_patch(response.content.decode(), "plan")
    [row] = patch.rows
    assert (row.number, row.text, row.after) == ("3", "Review", str(plan["write"].pk))
    assert "haico:saved" in response["HX-Trigger"]


def test_add_step_without_htmx_redirects_to_page(owner_client, thread):
    response = owner_client.post(ws_url(thread, "plan/add/"), {"text": "First"})
    assert response.status_code == 302 and response["Location"] == ws_url(thread)
    assert outline(thread) == [(0, "First", False)]


def test_add_sub_step_goes_last_under_its_parent(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["gather"], "add"), {"text": "Extract"}, **HTMX)

    assert response.status_code == 200
    assert outline(thread) == [ORIGINAL[0], ORIGINAL[1], ORIGINAL[2], (1, "Extract", False), ORIGINAL[3]]
    [row] = only_patch(response.content.decode(), "plan").rows
    assert (row.number, row.text, row.depth, row.after) == ("1.3", "Extract", 1, str(plan["screen"].pk))


@pytest.mark.parametrize(
    "text, message",
    [("", "Step text cannot be empty."), ("z" * 1001, "Step text is too long (1,001 characters; the limit is 1,000).")],
)
def test_add_bad_step_is_refused_at_the_add_form_and_adds_nothing(owner_client, thread, plan, text, message):
    response = owner_client.post(ws_url(thread, "plan/add/"), {"text": text}, **HTMX)
    assert response.status_code == 200
    error = only_patch(response.content.decode(), "error")
    assert (error.attrs["data-panel"], error.attrs["data-target"], error.text) == ("plan", "add", message)
    assert "HX-Trigger" not in response  # the add form keeps what was typed
    assert outline(thread) == ORIGINAL


def test_add_bad_sub_step_is_refused_at_its_open_form(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["write"], "add"), {"text": "q" * 1001}, **HTMX)
    error = only_patch(response.content.decode(), "error")
    assert (error.attrs["data-target"], error.attrs["data-row"]) == ("child", str(plan["write"].pk))
    assert "Step text is too long" in error.text
    assert outline(thread) == ORIGINAL


def test_add_bad_step_without_htmx_is_400_with_the_text_kept(owner_client, thread):
    response = owner_client.post(ws_url(thread, "plan/add/"), {"text": " " * 3 + "x" * 1001})
    html = response.content.decode()
    assert response.status_code == 400 and "Step text is too long" in html and 'role="alert"' in html
    assert 'value="   ' + "x" * 1001 in html
    assert outline(thread) == []


def test_add_refuses_get(owner_client, thread):
    assert owner_client.get(ws_url(thread, "plan/add/")).status_code == 405


def test_add_to_another_users_thread_is_404(other_client, thread):
    assert answered_as_missing(other_client.post(ws_url(thread, "plan/add/"), {"text": "Sneaky"}, **HTMX))
    assert outline(thread) == []


def test_add_requires_login(client, thread):
    response = client.post(ws_url(thread, "plan/add/"), {"text": "Anon"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert outline(thread) == []


# --- per-step actions: method, access, unknown ids ----------------------------------------

STEP_ACTIONS = [
    ("add", {"text": "x"}),
    ("edit", {"text": "x"}),
    ("done", {"done": "1"}),
    ("delete", {}),
    ("indent", {}),
    ("outdent", {}),
    ("move", {"direction": "up"}),
    ("place", {"before": ""}),
]


@pytest.mark.parametrize("action, data", STEP_ACTIONS)
def test_step_actions_refuse_get(owner_client, thread, plan, action, data):
    assert owner_client.get(step_url(thread, plan["screen"], action)).status_code == 405
    assert outline(thread) == ORIGINAL


@pytest.mark.parametrize("action, data", STEP_ACTIONS)
def test_step_actions_on_another_users_thread_are_404(other_client, thread, plan, action, data):
    assert answered_as_missing(other_client.post(step_url(thread, plan["screen"], action), data, **HTMX))
    assert outline(thread) == ORIGINAL


@pytest.mark.parametrize("action, data", STEP_ACTIONS)
def test_step_actions_require_login(client, thread, plan, action, data):
    response = client.post(step_url(thread, plan["screen"], action), data)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert outline(thread) == ORIGINAL


@pytest.mark.parametrize("action, data", STEP_ACTIONS)
def test_step_of_another_thread_is_404(owner_client, owner, thread, action, data):
    elsewhere = thread_create(owner=owner, title="Elsewhere")
    foreign = plan_services.todo_add(thread=elsewhere, text="Foreign")
    plan_services.todo_add(thread=elsewhere, text="Foreign child", parent=foreign)
    response = owner_client.post(ws_url(thread, f"plan/{foreign.pk}/{action}/"), data, **HTMX)
    assert answered_as_missing(response)
    assert outline(elsewhere) == [(0, "Foreign", False), (1, "Foreign child", False)]


@pytest.mark.parametrize("action, data", STEP_ACTIONS)
def test_unknown_step_id_is_404(owner_client, thread, plan, action, data):
    assert answered_as_missing(owner_client.post(ws_url(thread, f"plan/999999/{action}/"), data, **HTMX))
    assert outline(thread) == ORIGINAL


# --- edit / check ---------------------------------------------------------------------------


def test_edit_step_text(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["search"], "edit"), {"text": "Search three databases"}, **HTMX)
    assert response.status_code == 200
    assert outline(thread)[1] == (1, "Search three databases", False)
    [row] = only_patch(response.content.decode(), "plan").rows
    assert (row.id, row.text, row.number) == (f"step-{plan['search'].pk}", "Search three databases", "1.1")


def test_edit_step_with_empty_text_keeps_old_text(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["search"], "edit"), {"text": "   "}, **HTMX)
    error = only_patch(response.content.decode(), "error")
    assert (error.attrs["data-target"], error.attrs["data-row"], error.text) == (
        "edit",
        str(plan["search"].pk),
        "Step text cannot be empty.",
    )
    assert outline(thread) == ORIGINAL


def test_check_and_uncheck_step(owner_client, thread, plan):
    checked = owner_client.post(step_url(thread, plan["screen"], "done"), {"done": "1"}, **HTMX)
    assert outline(thread)[2] == (1, "Screen", True)
    [row] = only_patch(checked.content.decode(), "plan").rows
    assert row.checked and row.number == "1.2"

    unchecked = owner_client.post(step_url(thread, plan["screen"], "done"), {"done": "0"}, **HTMX)
    assert outline(thread) == ORIGINAL
    assert not only_patch(unchecked.content.decode(), "plan").rows[0].checked


@pytest.mark.parametrize("data", [{"done": "perhaps"}, {}])
def test_check_with_a_bad_or_missing_flag_changes_nothing(owner_client, thread, plan, data):
    response = owner_client.post(step_url(thread, plan["screen"], "done"), data, **HTMX)
    error = only_patch(response.content.decode(), "error")
    assert "Say whether the step is done" in error.text
    assert outline(thread) == ORIGINAL


def test_ticking_one_step_of_a_300_step_plan_answers_with_under_2_kb(owner_client, thread):
    plan_services.todos_add_outline(
        thread=thread, steps=[{"text": f"Step number {i} of the long plan", "depth": 0 if i % 4 == 0 else 1} for i in range(300)]
    )
    step = Todo.objects.filter(thread=thread).order_by("position")[150]
    response = owner_client.post(step_url(thread, step, "done"), {"done": "1"}, **HTMX)
    assert len(response.content) <= 2048, len(response.content)
    assert [row.id for row in only_patch(response.content.decode(), "plan").rows] == [f"step-{step.pk}"]


# --- delete -----------------------------------------------------------------------------------


def test_delete_step_removes_its_subtree(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["gather"], "delete"), **HTMX)
    assert response.status_code == 200
    assert outline(thread) == [(0, "Write", False)]
    patch = only_patch(response.content.decode(), "plan")
    assert sorted(patch.removed) == sorted(str(plan[k].pk) for k in ("gather", "search", "screen"))
    assert patch.rows == []  # the page renumbers what is left


# --- indent / outdent / move --------------------------------------------------------------------


def test_indent_makes_step_a_sub_step_of_its_previous_sibling(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["write"], "indent"), **HTMX)
    assert response.status_code == 200
    assert outline(thread) == [*ORIGINAL[:3], (1, "Write", False)]
    [row] = only_patch(response.content.decode(), "plan").rows
    assert (row.number, row.depth, row.after) == ("1.3", 1, str(plan["screen"].pk))


def test_indent_of_a_first_child_is_refused(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["search"], "indent"), **HTMX)
    error = only_patch(response.content.decode(), "error")
    assert response.status_code == 200
    assert "cannot be indented" in error.text and error.attrs["data-target"] == "row"
    assert outline(thread) == ORIGINAL


def test_outdent_moves_step_after_its_parent(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["search"], "outdent"), **HTMX)
    assert response.status_code == 200
    assert outline(thread) == [(0, "Gather", False), (1, "Screen", False), (0, "Search", False), (0, "Write", False)]
    [row] = only_patch(response.content.decode(), "plan").rows
    assert (row.text, row.depth, row.after, row.number) == ("Search", 0, str(plan["screen"].pk), "2")


def test_outdent_at_top_level_is_refused(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["write"], "outdent"), **HTMX)
    assert "already at the top level" in only_patch(response.content.decode(), "error").text
    assert outline(thread) == ORIGINAL


def test_move_up_and_down_within_its_level(owner_client, thread, plan):
    owner_client.post(step_url(thread, plan["screen"], "move"), {"direction": "up"}, **HTMX)
    assert outline(thread) == [ORIGINAL[0], ORIGINAL[2], ORIGINAL[1], ORIGINAL[3]]

    response = owner_client.post(step_url(thread, plan["gather"], "move"), {"direction": "down"}, **HTMX)
    assert outline(thread) == [(0, "Write", False), (0, "Gather", False), (1, "Screen", False), (1, "Search", False)]
    # The moved step's subtree, each row after the one before it.
    rows = only_patch(response.content.decode(), "plan").rows
    assert [(r.text, r.number, r.after) for r in rows] == [
        ("Gather", "2", str(plan["write"].pk)),
        ("Screen", "2.1", str(plan["gather"].pk)),
        ("Search", "2.2", str(plan["screen"].pk)),
    ]


@pytest.mark.parametrize(
    "step, direction, message",
    [
        ("search", "up", "already the first at its level"),
        ("screen", "down", "already the last at its level"),
        ("write", "down", "already the last at its level"),
        ("gather", "sideways", "Direction must be"),
        ("gather", "", "Direction must be"),
    ],
)
def test_moves_past_the_ends_or_unknown_direction_are_refused(owner_client, thread, plan, step, direction, message):
    response = owner_client.post(step_url(thread, plan[step], "move"), {"direction": direction}, **HTMX)
    assert response.status_code == 200
    assert message in only_patch(response.content.decode(), "error").text
    assert outline(thread) == ORIGINAL


def test_a_drop_before_a_sibling_moves_the_step_with_its_subtree(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["write"], "place"), {"before": plan["gather"].pk}, **HTMX)
    assert outline(thread) == [ORIGINAL[3], *ORIGINAL[:3]]
    rows = only_patch(response.content.decode(), "plan").rows
    assert [(r.text, r.number, r.after) for r in rows] == [("Write", "1", "")]

    # Before nothing: the end of the plan.
    owner_client.post(step_url(thread, plan["write"], "place"), {"before": ""}, **HTMX)
    assert outline(thread) == ORIGINAL


@pytest.mark.parametrize(
    "step, before, message",
    [
        ("write", "search", "only reorders a step among the steps at its own level"),
        ("write", "screen", "only reorders a step among the steps at its own level"),
        ("screen", "gather", "only reorders a step among the steps at its own level"),
        ("gather", "search", "among its own sub-steps"),
    ],
)
def test_a_drop_onto_another_level_is_refused_by_the_server(owner_client, thread, plan, step, before, message):
    response = owner_client.post(step_url(thread, plan[step], "place"), {"before": plan[before].pk}, **HTMX)
    assert response.status_code == 200
    assert message in only_patch(response.content.decode(), "error").text
    assert outline(thread) == ORIGINAL


@pytest.mark.parametrize("data", [{"before": "abc"}, {"before": "-1"}, {"before": "1.5"}, {"before": "١"}, {}])
def test_a_drop_before_something_that_is_not_a_step_id_is_refused(owner_client, thread, plan, data):
    response = owner_client.post(step_url(thread, plan["gather"], "place"), data, **HTMX)
    assert "Say which step it was dropped before" in only_patch(response.content.decode(), "error").text
    assert outline(thread) == ORIGINAL


def test_a_drop_before_a_step_of_another_thread_or_a_gone_one_changes_nothing(owner_client, owner, thread, plan):
    elsewhere = thread_create(owner=owner, title="Elsewhere")
    foreign = plan_services.todo_add(thread=elsewhere, text="Foreign")
    for before in (foreign.pk, 999999):
        response = owner_client.post(step_url(thread, plan["write"], "place"), {"before": before}, **HTMX)
        assert response.status_code == 200 and "no longer exists" in response.content.decode()
        assert outline(thread) == ORIGINAL


def test_refused_move_without_htmx_is_400(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["search"], "move"), {"direction": "up"})
    assert response.status_code == 400 and "already the first" in response.content.decode()
    assert outline(thread) == ORIGINAL


def test_a_complete_patch_lists_every_step_in_order_for_a_resync(thread, plan):
    from workspace.panels import render_plan_patch

    patch = only_patch(render_plan_patch(thread=thread), "plan")
    assert patch.attrs.get("data-complete") == "1"
    assert [(r.number, r.text) for r in patch.rows] == [("1", "Gather"), ("1.1", "Search"), ("1.2", "Screen"), ("2", "Write")]
    assert [r.after for r in patch.rows] == ["", *(str(plan[k].pk) for k in ("gather", "search", "screen"))]
    assert read_patches(render_plan_patch(thread=thread, ids=[999999]))[0].removed == ["999999"]


# --- outline numbers and the done count come with the patch (docs/adr/0081) -------


def _numbers(thread, plan, *names_and_numbers):
    return [(str(plan[name].pk), number) for name, number in names_and_numbers]


@pytest.mark.parametrize(
    "step, action, data, after",
    [
        ("screen", "indent", {}, [("gather", "1"), ("search", "1.1"), ("screen", "1.1.1"), ("write", "2")]),
        ("search", "outdent", {}, [("gather", "1"), ("screen", "1.1"), ("search", "2"), ("write", "3")]),
        ("write", "move", {"direction": "up"}, [("write", "1"), ("gather", "2"), ("search", "2.1"), ("screen", "2.2")]),
        ("search", "delete", {}, [("gather", "1"), ("screen", "1.1"), ("write", "2")]),
        ("gather", "delete", {}, [("write", "1")]),
    ],
)
def test_a_patch_that_may_renumber_steps_carries_every_steps_number_in_order(
    owner_client, thread, plan, step, action, data, after
):
    response = owner_client.post(step_url(thread, plan[step], action), data, **HTMX)

    patch = only_patch(response.content.decode(), "plan")
    assert patch.numbers == _numbers(thread, plan, *after)
    # The rows the change touched say the same.
    shown = dict(patch.numbers)
    assert all(row.number == shown[row.id.removeprefix("step-")] for row in patch.rows)
    assert patch.count == ("0", str(len(after)))


def test_a_drop_carries_every_steps_number(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["write"], "place"), {"before": plan["gather"].pk}, **HTMX)
    patch = only_patch(response.content.decode(), "plan")
    assert patch.numbers == _numbers(thread, plan, ("write", "1"), ("gather", "2"), ("search", "2.1"), ("screen", "2.2"))


@pytest.mark.parametrize(
    "step, action, data",
    [
        ("search", "edit", {"text": "Search again"}),
        ("search", "done", {"done": "1"}),
        ("gather", "add", {"text": "Read"}),
    ],
)
def test_a_patch_that_renumbers_nothing_carries_only_its_rows_and_the_count(owner_client, thread, plan, step, action, data):
    response = owner_client.post(step_url(thread, plan[step], action), data, **HTMX)

    patch = only_patch(response.content.decode(), "plan")
    assert patch.numbers is None
    steps = Todo.objects.filter(thread=thread)
    assert patch.count == (str(steps.filter(done=True).count()), str(steps.count()))


def test_the_agents_and_mcps_changes_reach_pages_with_the_numbers(thread, plan):
    """The tools and MCP write through the same services; their changes are
    rendered by the same function the live layer pushes."""
    from workspace import events
    from workspace.panels import render_changes

    with events.collecting() as changes:
        plan_services.todos_remove_by_index(thread=thread, indices=[1])
    patch = only_patch(render_changes(thread, events.merge(changes)), "plan")
    assert patch.numbers == _numbers(thread, plan, ("write", "1"))
    # By id as numbers: the ids may cross a power of ten (on PostgreSQL they
    # run on from earlier tests), where text order would differ.
    assert sorted(patch.removed, key=int) == sorted((str(plan[k].pk) for k in ("gather", "search", "screen")), key=int)


def test_the_patch_of_a_300_step_plan_stays_small(thread):
    from workspace.panels import render_plan_patch

    steps = plan_services.todos_add_outline(
        thread=thread, steps=[{"text": f"Step {i} of a long plan", "depth": [0, 1, 2, 1][i % 4]} for i in range(300)]
    )
    patch = render_plan_patch(thread=thread, ids=[steps[5].pk], renumbered=True)
    assert len(only_patch(patch, "plan").numbers) == 300
    assert len(patch.encode()) < 6_000

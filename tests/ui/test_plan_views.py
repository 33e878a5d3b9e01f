"""Plan panel: the todo tree and its read-only checklist view."""

import pytest

from conversations.services import thread_create
from workspace.models import Todo
from workspace.services import plan as plan_services

from .conftest import HTMX, ws_url

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


def test_plan_panel_shows_outline_numbers_and_row_controls(owner_client, thread, plan):
    response = owner_client.get(ws_url(thread, "plan/"), **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="panel-plan"' in html
    for number in ("1", "1.1", "1.2", "2"):
        assert f'<span class="step-number">{number}</span>' in html
    assert 'aria-label="Indent step 1.2"' in html
    assert 'aria-label="Outdent step 1.1"' in html
    assert 'aria-label="Move step 2 up"' in html
    # The checklist view is there too, read-only.
    assert "- [ ] 1 Gather" in html and "  - [ ] 1.1 Search" in html


def test_plan_panel_disables_moves_that_would_break_the_tree(owner_client, thread, plan):
    html = owner_client.get(ws_url(thread, "plan/"), **HTMX).content.decode()
    first_child_indent = html.split('aria-label="Indent step 1.1"')[1].split(">")[0]
    assert "disabled" in first_child_indent
    top_outdent = html.split('aria-label="Outdent step 1"')[1].split(">")[0]
    assert "disabled" in top_outdent


def test_empty_plan_says_so(owner_client, thread):
    html = owner_client.get(ws_url(thread, "plan/"), **HTMX).content.decode()
    assert "No plan yet" in html


def test_plan_panel_of_another_users_thread_is_404(other_client, thread):
    assert other_client.get(ws_url(thread, "plan/"), **HTMX).status_code == 404


# --- add --------------------------------------------------------------------------------


def test_add_step_at_the_end(owner_client, thread, plan):
    response = owner_client.post(ws_url(thread, "plan/add/"), {"text": "Review"}, **HTMX)

    assert response.status_code == 200
    assert outline(thread) == [*ORIGINAL, (0, "Review", False)]
    assert '<span class="step-number">3</span>' in response.content.decode()


def test_add_step_without_htmx_redirects_to_page(owner_client, thread):
    response = owner_client.post(ws_url(thread, "plan/add/"), {"text": "First"})
    assert response.status_code == 302 and response["Location"] == ws_url(thread)
    assert outline(thread) == [(0, "First", False)]


def test_add_sub_step_goes_last_under_its_parent(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["gather"], "add"), {"text": "Extract"}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert outline(thread) == [ORIGINAL[0], ORIGINAL[1], ORIGINAL[2], (1, "Extract", False), ORIGINAL[3]]
    assert '<span class="step-number">1.3</span>' in html and "Extract" in html


@pytest.mark.parametrize(
    "text, message",
    [("", "Step text cannot be empty."), ("z" * 1001, "Step text is too long (1,001 characters; the limit is 1,000).")],
)
def test_add_bad_step_shows_error_and_adds_nothing(owner_client, thread, plan, text, message):
    response = owner_client.post(ws_url(thread, "plan/add/"), {"text": text}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert 'role="alert"' in html and message in html
    assert outline(thread) == ORIGINAL


def test_add_bad_sub_step_keeps_the_sub_step_form_open_with_the_input(owner_client, thread, plan):
    text = "q" * 1001
    response = owner_client.post(step_url(thread, plan["write"], "add"), {"text": text}, **HTMX)
    html = response.content.decode()
    assert "Step text is too long" in html
    assert f'value="{text}"' in html
    assert outline(thread) == ORIGINAL


def test_add_bad_step_without_htmx_is_400(owner_client, thread):
    assert owner_client.post(ws_url(thread, "plan/add/"), {"text": " "}).status_code == 400
    assert outline(thread) == []


def test_add_refuses_get(owner_client, thread):
    assert owner_client.get(ws_url(thread, "plan/add/")).status_code == 405


def test_add_to_another_users_thread_is_404(other_client, thread):
    assert other_client.post(ws_url(thread, "plan/add/"), {"text": "Sneaky"}, **HTMX).status_code == 404
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
]


@pytest.mark.parametrize("action, data", STEP_ACTIONS)
def test_step_actions_refuse_get(owner_client, thread, plan, action, data):
    assert owner_client.get(step_url(thread, plan["screen"], action)).status_code == 405
    assert outline(thread) == ORIGINAL


@pytest.mark.parametrize("action, data", STEP_ACTIONS)
def test_step_actions_on_another_users_thread_are_404(other_client, thread, plan, action, data):
    assert other_client.post(step_url(thread, plan["screen"], action), data, **HTMX).status_code == 404
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
    assert response.status_code == 404
    assert outline(elsewhere) == [(0, "Foreign", False), (1, "Foreign child", False)]


@pytest.mark.parametrize("action, data", STEP_ACTIONS)
def test_unknown_step_id_is_404(owner_client, thread, plan, action, data):
    assert owner_client.post(ws_url(thread, f"plan/999999/{action}/"), data, **HTMX).status_code == 404
    assert outline(thread) == ORIGINAL


# --- edit / check ---------------------------------------------------------------------------


def test_edit_step_text(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["search"], "edit"), {"text": "Search three databases"}, **HTMX)
    assert response.status_code == 200
    assert outline(thread)[1] == (1, "Search three databases", False)
    assert "Search three databases" in response.content.decode()


def test_edit_step_with_empty_text_keeps_old_text(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["search"], "edit"), {"text": "   "}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "Step text cannot be empty." in html and 'role="alert"' in html
    assert outline(thread) == ORIGINAL


def test_check_and_uncheck_step(owner_client, thread, plan):
    checked = owner_client.post(step_url(thread, plan["screen"], "done"), {"done": "1"}, **HTMX)
    assert outline(thread)[2] == (1, "Screen", True)
    assert "1/4 done" in checked.content.decode()
    assert "- [x] 1.2 Screen" in checked.content.decode()

    # An unticked checkbox sends no value at all: that means "not done".
    owner_client.post(step_url(thread, plan["screen"], "done"), {}, **HTMX)
    assert outline(thread) == ORIGINAL


def test_check_with_bad_flag_changes_nothing(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["screen"], "done"), {"done": "perhaps"}, **HTMX)
    assert 'role="alert"' in response.content.decode()
    assert outline(thread) == ORIGINAL


# --- delete -----------------------------------------------------------------------------------


def test_delete_step_removes_its_subtree(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["gather"], "delete"), **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert outline(thread) == [(0, "Write", False)]
    assert "Search" not in html and '<span class="step-number">1</span>' in html


# --- indent / outdent / move --------------------------------------------------------------------


def test_indent_makes_step_a_sub_step_of_its_previous_sibling(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["write"], "indent"), **HTMX)
    assert response.status_code == 200
    assert outline(thread) == [*ORIGINAL[:3], (1, "Write", False)]
    assert '<span class="step-number">1.3</span>' in response.content.decode()


def test_indent_of_a_first_child_is_refused(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["search"], "indent"), **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "cannot be indented" in html and 'role="alert"' in html
    assert outline(thread) == ORIGINAL


def test_outdent_moves_step_after_its_parent(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["search"], "outdent"), **HTMX)
    assert response.status_code == 200
    assert outline(thread) == [(0, "Gather", False), (1, "Screen", False), (0, "Search", False), (0, "Write", False)]


def test_outdent_at_top_level_is_refused(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["write"], "outdent"), **HTMX)
    assert "already at the top level" in response.content.decode()
    assert outline(thread) == ORIGINAL


def test_move_up_and_down_within_its_level(owner_client, thread, plan):
    owner_client.post(step_url(thread, plan["screen"], "move"), {"direction": "up"}, **HTMX)
    assert outline(thread) == [ORIGINAL[0], ORIGINAL[2], ORIGINAL[1], ORIGINAL[3]]

    response = owner_client.post(step_url(thread, plan["gather"], "move"), {"direction": "down"}, **HTMX)
    assert outline(thread) == [(0, "Write", False), (0, "Gather", False), (1, "Screen", False), (1, "Search", False)]
    html = response.content.decode()
    assert html.index("Write") < html.index("Gather")


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
    html = response.content.decode()
    assert response.status_code == 200
    assert message in html and 'role="alert"' in html
    assert outline(thread) == ORIGINAL


def test_refused_move_without_htmx_is_400(owner_client, thread, plan):
    response = owner_client.post(step_url(thread, plan["search"], "move"), {"direction": "up"})
    assert response.status_code == 400
    assert outline(thread) == ORIGINAL


def test_plan_panel_rendered_for_a_push_carries_oob(thread, plan):
    from workspace.panels import render_panel

    html = render_panel("plan", thread=thread, oob=True)
    assert 'id="panel-plan"' in html and 'hx-swap-oob="true"' in html and "Screen" in html

"""What every open tab gets when the agent makes an artifact (docs/adr/0072):
the centre panel showing it, pushed; a big table's panel shows its first
rows, so it fits one message; one whose shown text alone cannot fit is
never rendered, and the push is the stand-in that makes each tab read the
workspace (docs/adr/0043, docs/adr/0141)."""

import pytest

from conversations.live import RESYNC, fits_one_message, render_changes
from workspace import panels
from workspace.events import Change
from workspace.services import artifacts as artifacts_services

pytestmark = pytest.mark.django_db


def _table(thread, rows, cell=""):
    payload = {"title": "Items", "columns": ["Item", "Note"], "rows": [[f"Item {n}", cell] for n in range(rows)]}
    return artifacts_services.artifact_create(
        thread=thread, artifact_type="data_table", title="Items", payload=payload, turn_index=1
    )


def _new(table):
    return [Change(thread_id=table.thread_id, surface="artifacts", ids=frozenset([table.pk]))]


@pytest.fixture
def panel_renders(monkeypatch):
    """How many times a whole panel is rendered."""
    names = []
    render_panel = panels.render_panel

    def counting(name, **kwargs):
        names.append(name)
        return render_panel(name, **kwargs)

    monkeypatch.setattr(panels, "render_panel", counting)
    return names


def test_a_new_10000_row_table_is_pushed_with_its_first_rows_in_one_message(thread, panel_renders):
    push = render_changes(thread, _new(_table(thread, 10_000)))
    assert fits_one_message(push) and panel_renders == ["centre"]
    assert push.count("<tr><td") == 500 and "Showing the first 500 of 10000 rows" in push
    assert 'hx-swap-oob="true"' in push


def test_a_new_table_whose_shown_rows_cannot_fit_one_message_is_not_rendered(thread, panel_renders):
    """500 rows of 600 characters: 300 000 bytes of text, over the 256 KB of a message before any markup."""
    push = render_changes(thread, _new(_table(thread, 500, cell="x" * 600)))
    assert push == RESYNC and panel_renders == []


def test_a_new_table_that_fits_is_rendered_once(thread, panel_renders):
    push = render_changes(thread, _new(_table(thread, 3, cell="note")))
    assert panel_renders == ["centre"] and push.count("<tr><td") == 3 and "Showing the first" not in push


def test_a_new_table_with_a_number_too_large_for_a_float_is_pushed(thread, panel_renders):
    """A table of powers of two up to 2^1400: every open page shows it (it was an OverflowError in the push)."""
    table = artifacts_services.artifact_create(
        thread=thread,
        artifact_type="data_table",
        title="Powers of two",
        payload={"columns": ["n", "2^n"], "rows": [[n, 2**n] for n in range(0, 1401, 50)]},
        turn_index=1,
    )
    push = render_changes(thread, _new(table))
    assert panel_renders == ["centre"] and str(2**1400) in push

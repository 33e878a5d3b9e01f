"""workspace.rows: the plan's and the preferences' rows, escaped and small."""

import pytest

from workspace.rows import preference_row, step_row
from workspace.selectors import PlanStep, ShownPreference

HOSTILE = "<img src=x onerror=alert(1)> \"quoted\" & 'single'"


def test_a_step_row_escapes_its_text_and_says_what_it_is():
    html = step_row(PlanStep(pk=7, text=HOSTILE, done=True, depth=2, number="1.1.2", after=5))
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&quot;quoted&quot; &amp; &#x27;single&#x27;" in html
    assert html.startswith('<li id="step-7" class="step is-done" data-depth="2" data-after="5">')
    assert 'aria-label="Done: step 1.1.2" checked>' in html
    assert 'aria-label="Actions for step 1.1.2"' in html
    assert "<form" not in html and "href" not in html and "/plan/" not in html


def test_a_first_step_in_a_patch_says_it_comes_first_and_a_page_row_says_nothing():
    assert 'data-after=""' in step_row(PlanStep(pk=1, text="a", done=False, depth=0, number="1", after=""))
    assert "data-after" not in step_row(PlanStep(pk=1, text="a", done=False, depth=0, number="1"))


@pytest.mark.parametrize("locked", [False, True])
def test_a_preference_row_escapes_title_and_detail_in_text_and_labels(locked):
    preference = ShownPreference(pk=3, title=HOSTILE, subtitle=HOSTILE, kind="hard", locked=locked)
    html = preference_row(preference)
    # The title and the detail, each once: the buttons' names are one word each,
    # the row's toolbar is named after the title in the page (static/js/keyboard.js).
    assert "<img" not in html and html.count("&lt;img src=x onerror=alert(1)&gt;") == 2
    verb = "Unlock" if locked else "Lock"
    assert f">{verb}</button>" in html and "aria-label" not in html
    assert "aria-pressed" not in html  # a toggle's name would have to stay the same
    assert ("Locked</span>" in html) is locked
    assert html.startswith('<li id="pref-3" class="pref pref-hard' + (" is-locked" if locked else "") + '">')


def test_a_step_row_stays_small():
    html = step_row(PlanStep(pk=123456, text="Step 42 of a long plan with some words", done=False, depth=2, number="12.3.4"))
    assert len(html) <= 330, len(html)

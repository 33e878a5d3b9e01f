"""URL templates (docs/adr/0081): the panels hold each row action's URL once,
with a placeholder the page fills in with the row's id, and the page asks
for what those filled-in URLs name."""

import re

import pytest
from django.urls import Resolver404, resolve, reverse

from tests.support.web import HTMX, ws_url
from workspace.panels import PREFERENCE_URLS, STEP_URLS
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services
from workspace.url_templates import ROW, TURN

pytestmark = pytest.mark.django_db


def _filled(url, pk):
    """What static/js (HAICO.urls.fill) makes of a URL template for row `pk`."""
    assert url.count(ROW) == 1, url
    return url.replace(ROW, str(pk))


def test_the_plan_panel_holds_each_step_action_once_with_the_step_left_to_fill_in(owner_client, thread):
    step = plan_services.todo_add(thread=thread, text="Gather")
    html = owner_client.get(ws_url(thread, "plan/"), **HTMX).content.decode()
    panel = re.search(r'<div id="panel-plan"[^>]*>', html).group(0)
    held = dict(re.findall(r'data-([a-z]+)-url="([^"]*)"', panel))
    forms = dict(re.findall(r'data-step-form="([a-z]+)">\s*<form[^>]* action="([^"]*)"', html))
    held.update(edit=forms["edit"], add=forms["child"])
    assert set(held) == set(STEP_URLS)
    for action, url in held.items():
        assert _filled(url, step.pk) == reverse(STEP_URLS[action], kwargs={"thread_id": thread.pk, "pk": step.pk})
        assert html.count(url) <= 2  # once per panel (a form's action and hx-post), never per row


def test_the_preferences_panel_holds_each_action_once(owner_client, thread):
    preference = preference_services.preference_add(thread=thread, title="Short", kind="soft", respect_lock=False)
    html = owner_client.get(ws_url(thread, "preferences/"), **HTMX).content.decode()
    panel = re.search(r'<section id="panel-preferences"[^>]*>', html).group(0)
    held = dict(re.findall(r'data-([a-z]+)-url="([^"]*)"', panel))
    held["edit"] = re.search(r'data-pref-form="edit">\s*<form[^>]* action="([^"]*)"', html).group(1)
    assert set(held) == set(PREFERENCE_URLS)
    for action, url in held.items():
        assert _filled(url, preference.pk) == reverse(
            PREFERENCE_URLS[action], kwargs={"thread_id": thread.pk, "pk": preference.pk}
        )


def test_the_chat_asks_from_the_turn_the_page_fills_in(owner_client, thread):
    html = owner_client.get(reverse("thread-page", kwargs={"thread_id": thread.pk})).content.decode()
    url = re.search(r'data-chat-from-url="([^"]*)"', html).group(1)
    assert url.replace(TURN, "3") == reverse("conversations:chat-from", kwargs={"thread_id": thread.pk, "turn_index": 3})


@pytest.mark.parametrize("placeholder", [ROW, TURN])
def test_a_placeholder_left_unfilled_names_no_page(thread, placeholder):
    with pytest.raises(Resolver404):
        resolve(ws_url(thread, f"plan/{placeholder}/done/"))
    with pytest.raises(Resolver404):
        resolve(f"/threads/{thread.pk}/chat/from/{placeholder}/")

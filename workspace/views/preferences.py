"""Preferences: add, edit, delete, lock/unlock. The person's path never
respects locks (`respect_lock=False`): locks only bind the agent. Answers are
patches of what changed, like the plan's."""

from django.contrib.auth.decorators import login_required
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from ..forms import PreferenceAddForm, PreferenceEditForm, PreferenceLockForm
from ..models import Preference
from ..selectors import Access
from ..services import preferences as preference_services
from .common import act_on_row, add_to_panel, get_thread_for_user, panel_response

PANEL = "preferences"
PREFERENCE_GONE = "That preference no longer exists (it may have been deleted in another tab); the list now shows what is left."


@login_required
@require_GET
def preferences_panel(request, thread_id):
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    return panel_response(request, PANEL, thread=thread)


@login_required
@require_POST
def preference_add(request, thread_id):
    def add(thread, data):
        preference_services.preference_add(thread=thread, respect_lock=False, **data)

    return add_to_panel(request, thread_id, add, panel=PANEL, form_class=PreferenceAddForm)


def _on_preference(request, thread_id, pk, action, **options):
    """Run `action(preference, cleaned_data)` on a preference of this thread (see `act_on_row`)."""
    return act_on_row(request, thread_id, pk, action, model=Preference, panel=PANEL, gone_message=PREFERENCE_GONE, **options)


@login_required
@require_POST
def preference_update(request, thread_id, pk):
    def update(preference, data):
        preference_services.preference_update(preference=preference, respect_lock=False, **data)

    return _on_preference(request, thread_id, pk, update, form_class=PreferenceEditForm, target="edit")


@login_required
@require_POST
def preference_delete(request, thread_id, pk):
    return _on_preference(
        request,
        thread_id,
        pk,
        lambda preference, data: preference_services.preference_delete(preference=preference, respect_lock=False),
    )


@login_required
@require_POST
def preference_lock(request, thread_id, pk):
    def lock(preference, data):
        preference_services.preference_set_locked(preference=preference, locked=data["locked"], respect_lock=False)

    return _on_preference(request, thread_id, pk, lock, form_class=PreferenceLockForm)


urlpatterns = [
    path("preferences/", preferences_panel, name="preferences"),
    path("preferences/add/", preference_add, name="preference-add"),
    path("preferences/<row:pk>/edit/", preference_update, name="preference-update"),
    path("preferences/<row:pk>/delete/", preference_delete, name="preference-delete"),
    path("preferences/<row:pk>/lock/", preference_lock, name="preference-lock"),
]

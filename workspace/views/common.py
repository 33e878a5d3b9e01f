"""What every workspace view shares: the owner-scoped lookups and the one way
a panel answers a request.

A panel view always answers with the panel's own partial (the same one the
page includes and the agent turn pushes), so an htmx swap, a reload and a
WebSocket push all show the same thing."""

from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from .. import panels
from ..errors import InvalidInput, WorkspaceError
from ..models import Thread
from ..selectors import get_thread_for_user_or_404

TRUE_VALUES = {"1", "true", "on", "yes"}
FALSE_VALUES = {"0", "false", "off", "no", ""}


def get_thread_for_user(request: HttpRequest, thread_id) -> Thread:
    """The signed-in person's live thread, or 404 (also for other people's)."""
    return get_thread_for_user_or_404(user=request.user, thread_id=thread_id)


def get_in_thread_or_404(model: type[Model], *, thread: Thread, pk: int):
    """A workspace row by id, only if it belongs to `thread`."""
    return get_object_or_404(model, thread=thread, pk=pk)


def parse_flag(value, *, label: str) -> bool:
    """A yes/no form value; anything else is refused rather than guessed."""
    if value is None:
        raise InvalidInput(f"Say whether {label} (1 or 0).")
    normalised = str(value).strip().lower()
    if normalised in TRUE_VALUES:
        return True
    if normalised in FALSE_VALUES:
        return False
    raise InvalidInput(f"Say whether {label} (1 or 0), not {value!r}.")


def panel_response(
    request: HttpRequest,
    name: str,
    *,
    thread: Thread,
    error: WorkspaceError | str | None = None,
    **extra,
) -> HttpResponse:
    """Answer with panel `name`, showing `error` inside it when given.

    htmx gets the fragment (status 200 even with an error, so htmx swaps it in
    and the message and the person's input stay on screen). A plain form POST
    that worked goes back to the page; one that failed gets a 400 with the
    panel and its message.
    """
    message = getattr(error, "message", error)
    if message is None and request.method == "POST" and not request.htmx:
        return redirect("thread-page", thread_id=thread.pk)
    context = panels.panel_context(name, thread=thread, error=message, **extra)
    status = 400 if message and not request.htmx else 200
    return render(request, panels.PANEL_TEMPLATES[name], context, status=status)

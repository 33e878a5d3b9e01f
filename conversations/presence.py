"""Presence: who has a thread open now (docs/adr/0087).

One row per open socket of a thread's page (conversations.models.OpenPage),
so that every server process sees the same people: a person with three tabs
open is one presence, and leaves it when the last tab closes. Rows are
written when a socket connects and removed when it closes, never per turn.
After each change the top bar's presence is rendered once and pushed to the
thread's group, with the partial the page renders.

A server that dies leaves its rows behind. Its next start under the same
name removes them at once (`presence_release_predecessor`); otherwise every
process refreshes the rows of its sockets still open every
turns.registry.RECOVERY_SECONDS and removes anyone's left unrefreshed for
STALE_AFTER (`presence_sweep`).

The staff view's socket records nothing: staff reading a thread are not
shown to its people.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from workspace.people import display_name

from . import outages
from .live import publisher
from .models import OpenPage
from .turns import process

logger = logging.getLogger("haico.conversations.presence")

PRESENCE_TEMPLATE = "conversations/fragments/presence.html#presence"
# Three missed refreshes (every 10 s) and a server is taken for dead.
STALE_AFTER = timedelta(seconds=30)
# Initials shown on a wide screen before "+N"; five chips fit beside a long
# title and the account links at 1 024 px.
PRESENCE_SHOWN = 4


@dataclass(frozen=True)
class PresentPerson:
    user_id: int
    name: str
    initials: str


def initials(name: str) -> str:
    """Up to two letters for a name: its first and last words' first letters."""
    words = name.split()
    if not words:
        return "?"
    letters = words[0][0] + (words[-1][0] if len(words) > 1 else "")
    return letters.upper()


# --- reads ---------------------------------------------------------------------


def present_people(*, thread_id, also=None) -> list[PresentPerson]:
    """The people with the thread open now, by name; `also` (a user about
    to open it: the page being rendered) is counted in."""
    users = list(get_user_model().objects.filter(open_pages__thread_id=thread_id).distinct())
    if also is not None and all(user.pk != also.pk for user in users):
        users.append(also)
    named = sorted(((display_name(user), user.pk) for user in users), key=lambda pair: (pair[0].casefold(), pair[1]))
    return [PresentPerson(user_id=pk, name=name, initials=initials(name)) for name, pk in named]


def presence_context(*, thread_id, also=None) -> dict:
    """What the presence partial renders (the page includes it with this):
    everyone in the label; on a wide screen the first PRESENCE_SHOWN as
    initials and "+N" for the others, on a narrower one the first and "+N"
    (static/css/haico.css), so a team's presence never pushes the top bar's
    title and links off the screen. Each "+N" names its people on hover."""
    people = present_people(thread_id=thread_id, also=also)
    label = "Open now: " + (", ".join(person.name for person in people) if people else "nobody")
    return {
        "people": people[:PRESENCE_SHOWN],
        "label": label,
        "more_wide": _more(people[PRESENCE_SHOWN:]),
        "more_narrow": _more(people[1:]),
    }


@dataclass(frozen=True)
class MorePeople:
    count: int
    names: str


def _more(people: list[PresentPerson]) -> MorePeople | None:
    return MorePeople(count=len(people), names=", ".join(person.name for person in people)) if people else None


def render_presence(*, thread_id, oob: bool = False) -> str:
    """The top bar's presence, as every push carries it (oob)."""
    return render_to_string(PRESENCE_TEMPLATE, {**presence_context(thread_id=thread_id), "oob": oob})


def publish_presence(thread_id) -> None:
    """Every open tab of the thread gets its presence (after a change commits)."""
    try:
        publisher.publish(thread_id, render_presence(thread_id=thread_id, oob=True))
    except Exception as error:
        # Presence is a courtesy: a tab that missed it is right at its next change or reload.
        outages.note(logger, error, "could not push the presence of thread %s", thread_id)


# --- writes --------------------------------------------------------------------


@transaction.atomic
def presence_open(*, thread_id, user, channel_name: str) -> None:
    """A socket of `user` opened the thread's page."""
    OpenPage.objects.update_or_create(
        channel_name=channel_name,
        defaults={
            "thread_id": thread_id,
            "user": user,
            "instance": process.instance(),
            "boot": process.BOOT,
            "seen_at": timezone.now(),
        },
    )
    transaction.on_commit(lambda: publish_presence(thread_id))


@transaction.atomic
def presence_close(*, channel_name: str) -> None:
    """The socket `channel_name` closed."""
    thread_ids = _delete(OpenPage.objects.filter(channel_name=channel_name))
    _publish_on_commit(thread_ids)


def presence_keepalive(*, channel_names) -> int:
    """This process's sockets `channel_names` are still open: one statement
    for all of them. Only those: a row whose removal failed when its socket
    closed (the database away for a moment) ages and is swept like a dead
    server's."""
    rows = OpenPage.objects.filter(instance=process.instance(), boot=process.BOOT, channel_name__in=list(channel_names))
    return rows.update(seen_at=timezone.now())


@transaction.atomic
def presence_release_predecessor() -> int:
    """At start-up: the rows an earlier run of this server (same name,
    another boot) left are removed; how many threads it changed."""
    rows = OpenPage.objects.filter(instance=process.instance()).exclude(boot=process.BOOT)
    thread_ids = _delete(rows)
    _publish_on_commit(thread_ids)
    return len(thread_ids)


@transaction.atomic
def presence_sweep(now=None) -> int:
    """Any process, now and then: the rows no server refreshed for
    STALE_AFTER (a server that died) are removed; how many threads it changed."""
    cutoff = (now or timezone.now()) - STALE_AFTER
    thread_ids = _delete(OpenPage.objects.filter(seen_at__lt=cutoff))
    _publish_on_commit(thread_ids)
    return len(thread_ids)


def _delete(rows) -> set:
    """Delete `rows`; the threads whose presence that changed."""
    found = list(rows.values_list("pk", "thread_id"))
    if found:
        OpenPage.objects.filter(pk__in=[pk for pk, _thread_id in found]).delete()
    return {thread_id for _pk, thread_id in found}


def _publish_on_commit(thread_ids) -> None:
    for thread_id in thread_ids:
        transaction.on_commit(lambda thread_id=thread_id: publish_presence(thread_id))

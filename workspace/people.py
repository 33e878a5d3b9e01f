"""Who did something, as the workspace records and shows it (docs/adr/0085).

Every row a person's action writes keeps the person twice: a link to the
user (`person`, gone if the user is) and the username as it was then
(`person_username`), so an archive imported from another server, or a
person removed since, still says who it was. One name is shown for a
person everywhere and to every viewer (a push is rendered once for every
tab of a thread, so never "you"): the full name if set, else the username.
"""

from __future__ import annotations

from typing import Any


def display_name(user: Any) -> str:
    """The name shown for `user`: the full name if set, else the username."""
    if user is None:
        return ""
    full_name = user.get_full_name() if hasattr(user, "get_full_name") else ""
    return (full_name or "").strip() or user.get_username()


def recorded_name(person: Any, username: str) -> str:
    """The name shown for a recorded person: the user's own while the user
    exists, else the username kept with the row ("" when none was kept)."""
    return display_name(person) if person is not None else (username or "")


def by(user: Any) -> dict:
    """The fields that record `user` on a row (see PersonRecorded); None records nobody."""
    if user is None or not getattr(user, "is_authenticated", False):
        return {"person": None, "person_username": ""}
    return {"person": user, "person_username": user.get_username()}


def gone(user: Any) -> dict:
    """The fields that record `user` once their account was deleted: the username, no link."""
    return {"person": None, "person_username": by(user)["person_username"]}


# As long as Django's own username field.
USERNAME_MAX_CHARS = 150


def imported(username: str, *, importer: Any) -> dict:
    """The fields recording a person named in an imported archive. Only the
    importer is linked (their own name coming back); every other name is
    kept as text: an archive is a file anyone can edit, so it must not make
    an account of this server the author of anything, nor show anyone
    another account's full name (docs/adr/0085)."""
    if not username:
        return {"person": None, "person_username": ""}
    mine = importer is not None and username == importer.get_username()
    return {"person": importer if mine else None, "person_username": username}

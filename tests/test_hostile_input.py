"""Hostile input never gives a 500, and refused input changes nothing.

Every HTTP route of the site (read from the URL resolver, so a new route is
probed as soon as it exists) is asked, as the owner, another user and an
anonymous visitor, with every method and with bodies made to be refused:
NUL characters, text over every limit, blank text, lone surrogates and
deeply nested or oddly typed JSON (1e400, huge and negative numbers, "²",
lists, objects, null; and, to the views that read a JSON body, a valid
save with one odd field), no fields at all, more fields or bytes than Django
reads, broken multipart; and with ids no row has (unicode digits, negative,
past 64 bits). The admin gets the same as staff. The thread socket gets the
same kinds of frames. After each route's probes the database is compared
with what it held before: nothing may have changed, except through the few
routes that act without any input (delete, indent, a new thread, log out),
which are only held to "no 500". Each route, and the admin pages of each
registered model, is a case of its own on a fresh workspace, so the walk
spreads over xdist workers and a failure names its route.
"""

import functools
import inspect
import json
import types
import uuid

import pytest
from asgiref.sync import sync_to_async
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.urls.converters import IntConverter

from conversations.services import thread_create
from tests.conversations.helpers import open_socket
from tests.support.turns import turn_environment  # noqa: F401  (autouse: the socket probes' turns end here)
from tests.support.web import database_rows
from workspace.services import artifacts as artifact_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services
from workspace.text import has_lone_surrogate

FIELDS = [
    "text",
    "title",
    "subtitle",
    "kind",
    "done",
    "locked",
    "direction",
    "base_version",
    "content",
    "artifact",
    "message",
    "model",
    "action",
    "username",
    "password",
    "password1",
    "password2",
    "email",
    "next",
    "old_password",
    "new_password1",
    "new_password2",
    "q",
    "o",
    "p",
    "_selected_action",
    "index",
    "base_content",
    # The editor page's save numbers (docs/adr/0139).
    "save_page",
    "save_number",
    "save_unanswered_from",
    "save_left_page",
    "save_left_number",
    "save_left_unanswered_from",
    # Sign-up, tokens, the model catalogue and the usage totals (docs/adr/0061-0064).
    "invite",
    "name",
    "expires",
    "read_only",
    "days",
    "note",
    "base_url",
    "new_api_key",
    "since",
    "until",
    "user",
]
REFUSED_TEXT = ["a\x00b", "   "]
# Longer than any text the site keeps; sent in fields few enough per request
# that the body stays under Django's 2.5 MB limit, so each field's own
# length check is what answers (the whole body over the limit is "form too big").
TOO_LONG = "x" * 300_001
LONG_FIELD_GROUPS = [
    ("text", "title", "subtitle", "content", "base_content", "message"),
    ("name", "note", "email", "username", "base_url", "q", "password1", "invite"),
]
ODD_JSON = [1e400, -1, 10**30, -(10**30), "²", "٣", [[[]]], {"a": {"b": 1}}, None, True, 1.5, "\ud800", "a\udfffb"]
BAD_IDS = ["²", "٣", "-1", "0", "99999999999999999999999", "9223372036854775808", "1e400", "%ED%A0%80", "%00", "null"]
METHODS_WITHOUT_BODY = ["put", "patch", "delete", "options", "head", "trace"]
HTMX = {"HTTP_HX_REQUEST": "true"}
FORM = "application/x-www-form-urlencoded"

# Routes that do something with no input at all: the owner's probes may change
# the database through them (a step deleted, a thread created, a session
# ended); every other route must refuse every probe and change nothing.
ACTS_WITHOUT_INPUT = {
    "workspace:plan-delete",
    "workspace:plan-indent",
    "workspace:plan-outdent",
    "workspace:preference-delete",
    "conversations:create",
    "conversations:delete",
    "conversations:share-link-make",
    "conversations:share-link-revoke",
    "logout",
    "admin:logout",
}
# Of those, the ones not bound to the owner's thread: another person's probe
# creates their own thread or ends their own session.
ACTS_FOR_ANYONE_LOGGED_IN = {"conversations:create", "logout", "admin:logout"}
# The health probe reads no input (GET and HEAD only, no parameters) and
# is not walked: through the test client each request runs in an event loop
# of its own, closed after it, so every probe would open the process's
# checkpointer afresh and wait out its 2 s check (on PostgreSQL the loop's
# close can wait for the half-opened pool for good). Its answers, and its
# refusal of other methods, are tested in tests/haico_site/test_health.py.
NOT_WALKED = {"healthz"}


def _routes(patterns=None, namespace=""):
    """(view name, URL kwargs) of every named route of the site, the admin's apart."""
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(entry, URLResolver):
            if entry.app_name == "admin":
                continue
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            for name, converters in _routes(entry.url_patterns, inner):
                yield name, {**dict(entry.pattern.converters), **converters}
        elif isinstance(entry, URLPattern) and entry.name:
            yield f"{namespace}{entry.name}", dict(entry.pattern.converters)


def _form(value):
    return {name: value for name in FIELDS}


def _payloads():
    """(label, content type, body) for POST-like requests; each one must be refused."""
    for value in REFUSED_TEXT:
        yield f"form {value[:8]!r}", "application/x-www-form-urlencoded", _form(value)
    for fields in LONG_FIELD_GROUPS:
        yield f"form too long: {fields[0]}…", "application/x-www-form-urlencoded", dict.fromkeys(fields, TOO_LONG)
    yield "form empty", "application/x-www-form-urlencoded", {}
    yield "form too big", "application/x-www-form-urlencoded", {"text": "x" * 2_700_000}
    yield "form too many fields", "application/x-www-form-urlencoded", {f"f{n}": "1" for n in range(1_500)}
    yield "multipart broken", "multipart/form-data; boundary=xyz", b"--xyz\r\nnot a part"
    yield "json nested", "application/json", "[" * 100_000
    yield "json nested object", "application/json", '{"content": ' + "[" * 5_000 + "]" * 5_000 + "}"
    yield "json not an object", "application/json", '"text"'
    yield "json broken", "application/json", "{not json"
    yield "json not utf-8", "application/json", b'{"content": "\xff\xfe"}'
    for value in ODD_JSON:
        yield f"json {value!r:.12}", "application/json", json.dumps({name: value for name in FIELDS})


def _payloads_for_json_views():
    """One odd field at a time, the others as a valid save would send them:
    for the views that read a JSON body; any other view reads such a body
    as a form with no fields, which "form empty" probes already."""
    for value in ODD_JSON:
        for name in ("base_version", "content", "title", "base_content"):
            if name != "base_version" and (value is None or isinstance(value, str) and not has_lone_surrogate(value)):
                # "²" is good text for a title or a document, and null means
                # "not sent" (a title-only save): those saves go through.
                continue
            body = {"title": "T", "content": "c", "base_version": 0, name: value}
            yield f"json {name}={value!r:.12}", "application/json", json.dumps(body)


def _queries():
    yield "query NUL", "&".join(f"{name}=a%00b" for name in FIELDS)
    yield "query surrogate bytes", "&".join(f"{name}=%ED%A0%80" for name in FIELDS)
    yield "query unicode digit", "&".join(f"{name}=%C2%B2" for name in FIELDS)
    yield "query huge", "&".join(f"{name}=99999999999999999999999" for name in FIELDS)
    yield "query repeated", "&".join(f"artifact={n}" for n in range(50))


def _database():
    """Every row the site's people and models own (sessions and login
    attempts aside), read as plain rows. Not the transaction's write counts
    (tests.support.web.RowChanges): a refused save may write and roll back
    (a document row made under the lock, then a conflict), which changes nothing."""
    user = apps.get_model("auth", "User")
    models = [
        model
        for label in ("workspace", "conversations", "agent")
        for model in apps.get_app_config(label).get_models(include_auto_created=True)
    ]
    return database_rows(
        [
            *models,
            user,
            user.groups.through,
            user.user_permissions.through,
            apps.get_model("auth", "Group"),
            apps.get_model("admin", "LogEntry"),
        ]
    )


def _workspace_of(owner):
    thread = thread_create(owner=owner, title="Probed")
    step = plan_services.todo_add(thread=thread, text="A step")
    plan_services.todo_add(thread=thread, text="A sub-step", parent=step)
    preference = preference_services.preference_add(thread=thread, title="A preference", respect_lock=False)
    artifact = artifact_services.artifact_create(
        thread=thread, artifact_type="table", title="T", payload={"columns": ["a"], "rows": [[1]]}, turn_index=0
    )
    return thread, {"step": step.pk, "preference": preference.pk, "artifact": artifact.pk}


def _url(name, converters, thread, ids):
    kwargs = {}
    for key, converter in converters.items():
        kind = type(converter).__name__
        if kind == "UUIDConverter":
            kwargs[key] = thread.pk
        elif isinstance(converter, IntConverter):  # also a row's id or a turn's number (workspace.url_templates)
            kwargs[key] = ids["preference"] if "preference" in name else ids["step"]
        elif kind == "StringConverter":
            kwargs[key] = "MQ"  # e.g. a password-reset link's uidb64 and token
        else:
            raise AssertionError(f"{name}: teach the probe to fill a {kind}")
    return reverse(name, kwargs=kwargs)


def _probe(client, path, *, htmx_too=True):
    """Every hostile request to `path`; returns the ones answered with a 5xx."""
    failures = []

    def check(label, response):
        if response.status_code >= 500:
            failures.append(f"{label} {path}: {response.status_code}")

    headers = [{}, HTMX] if htmx_too else [{}]
    payloads = _payloads_as_sent() + (_json_view_payloads() if _reads_a_json_body(path) else [])
    for extra in headers:
        for label, content_type, data in payloads:
            check(label, client.post(path, data, content_type=content_type, **extra))
        for label, query in _queries():
            check(label, client.get(f"{path}?{query}", **extra))
    for method in METHODS_WITHOUT_BODY:
        check(method, client.generic(method.upper(), path, b"{}", content_type="application/json"))
    return failures


def _reads_a_json_body(path: str) -> bool:
    """Whether the view at `path` reads a JSON body: it calls
    workspace.views.document.read_body, read from the view's own source so a
    new view that reads one is probed with the JSON payloads at once."""
    view = inspect.unwrap(resolve(path).func)
    return "read_body(" in inspect.getsource(view)


@functools.cache
def _json_view_payloads() -> list[tuple[str, str, str]]:
    return list(_payloads_for_json_views())


def _encode(fields: dict) -> bytes:
    from urllib.parse import quote

    return "&".join(f"{quote(name)}={quote(value)}" for name, value in fields.items()).encode()


@functools.cache
def _payloads_as_sent() -> list[tuple[str, str, bytes | str]]:
    """_payloads() with the form bodies encoded, once for the whole walk
    (quoting the megabyte-long ones costs more than sending them)."""
    return [(label, content_type, _encode(body) if content_type == FORM else body) for label, content_type, body in _payloads()]


def _client(user=None):
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


ROUTES = sorted(route for route in _routes() if route[0] not in NOT_WALKED)


def test_the_walk_is_read_from_the_url_resolver():
    assert len(ROUTES) > 30  # the resolver was read, not an empty list
    assert {name for name, _ in ROUTES} >= {"conversations:list", "workspace:document-save", "login"}


def test_the_views_that_read_a_json_body_get_the_one_odd_field_payloads():
    thread, ids = types.SimpleNamespace(pk=uuid.uuid4()), {"step": 1, "preference": 1}
    reading_json = {name for name, converters in ROUTES if _reads_a_json_body(_url(name, converters, thread, ids))}
    assert reading_json == {"workspace:document-save", "workspace:document-preview"}
    assert len(_json_view_payloads()) > 30


# One case per route, each on a fresh workspace in a database of its own (the
# test's transaction), so the cases run in any order and on any xdist worker.
@pytest.mark.django_db
@pytest.mark.parametrize(("name", "converters"), ROUTES, ids=[name for name, _ in ROUTES])
def test_every_http_route_refuses_hostile_input_without_a_500_and_changes_nothing(name, converters, owner, other_user):
    thread, ids = _workspace_of(owner)
    path = _url(name, converters, thread, ids)
    personas = (("owner", _client(owner)), ("other user", _client(other_user)), ("anonymous", _client()))
    failures, changed = [], []
    before = _database()
    for persona, client in personas:
        failures += [f"{persona}: {failure}" for failure in _probe(client, path, htmx_too=persona == "owner")]
        after = _database()
        acts = ACTS_WITHOUT_INPUT if persona == "owner" else ACTS_FOR_ANYONE_LOGGED_IN if persona == "other user" else set()
        if name not in acts and after != before:
            changed.append(f"{persona}: {name} ({path})")
        before = after  # nothing runs between one persona's probes and the next one's
    assert failures == []
    assert changed == []


@pytest.mark.django_db
def test_ids_no_row_has_are_refused_without_a_500(owner):
    thread, ids = _workspace_of(owner)
    client = _client(owner)
    before = _database()
    failures = []
    base = f"/threads/{thread.pk}/workspace/"
    for bad in BAD_IDS:
        for path in (
            f"{base}plan/{bad}/edit/",
            f"{base}plan/{bad}/done/",
            f"{base}preferences/{bad}/lock/",
            f"{base}centre/?artifact={bad}",
            f"/threads/{bad}/workspace/",
            f"/threads/{bad}/rename/",
            f"/accounts/reset/{bad}/{bad}/",
        ):
            for extra in ({}, HTMX):
                for response in (
                    client.get(path, **extra),
                    client.post(path, {"text": "x", "done": "1", "locked": "1"}, **extra),
                ):
                    if response.status_code >= 500:
                        failures.append(f"{path}: {response.status_code}")
    assert failures == []
    assert _database() == before


def _admin_paths():
    """(case, its paths): the admin's own pages, then each registered model's."""
    yield (
        "admin site",
        [
            "/admin/",
            "/admin/password_change/",
            "/admin/jsi18n/",
            "/admin/autocomplete/?app_label=workspace&model_name=todo&field_name=thread&term=%00",
            "/admin/autocomplete/?app_label=%C2%B2&model_name=%ED%A0%80",
            "/admin/%ED%A0%80/",
            "/admin/conversations/modelusage/totals/",
        ],
    )
    for model in admin.site._registry:
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        paths = [base, base + "add/"]
        for bad in ("²", "-1", "99999999999999999999999", "%ED%A0%80", str(uuid.uuid4())):
            paths += [f"{base}{bad}/change/", f"{base}{bad}/delete/", f"{base}{bad}/history/"]
        yield model._meta.label, paths


ADMIN_CASES = list(_admin_paths())
ADMIN_ACTIONS = [
    {"action": action, "_selected_action": ["²", "-1", "99999999999999999999999"], "index": "0"}
    for action in (
        "delete_selected",
        "lock_selected",
        "soft_delete_selected",
        "restore_selected",
        "cleanup_expired_attempts",
        "²",
    )
]


def test_the_admin_walk_covers_every_registered_model():
    assert [case for case, _ in ADMIN_CASES[1:]] == [model._meta.label for model in admin.site._registry]
    assert len(ADMIN_CASES) > 10


@pytest.mark.django_db
@pytest.mark.parametrize(("case", "paths"), ADMIN_CASES, ids=[case for case, _ in ADMIN_CASES])
def test_the_admin_refuses_hostile_input_from_staff_without_a_500_and_changes_nothing(case, paths, owner, staff):
    _workspace_of(owner)
    client = _client(staff)
    failures, changed = [], []
    before = _database()
    for path in paths:
        for label, content_type, data in _payloads_as_sent()[:8]:
            response = client.post(path, data, content_type=content_type)
            if response.status_code >= 500:
                failures.append(f"{label} {path}: {response.status_code}")
        for label, query in _queries():
            response = client.get(f"{path}{'&' if '?' in path else '?'}{query}")
            if response.status_code >= 500:
                failures.append(f"{label} {path}: {response.status_code}")
        if path.count("/") == 4 and path != "/admin/password_change/":  # a changelist
            for data in ADMIN_ACTIONS:
                response = client.post(path, data)
                if response.status_code >= 500:
                    failures.append(f"{data['action']} {path}: {response.status_code}")
        after = _database()
        if after != before:
            changed.append(path)
        before = after  # nothing runs between one path's probes and the next one's
    assert failures == []
    assert changed == []


# --- the thread socket ------------------------------------------------------------------

FRAMES = [
    "{not json",
    "[" * 100_000,
    '{"message": ' + "[" * 5_000 + "]" * 5_000 + "}",
    "null",
    "42",
    '"text"',
    "[]",
    "{}",
    json.dumps({"message": "\ud800"}),
    json.dumps({"message": "a\udfffb", "model": "\ud800"}),
    json.dumps({"message": "hello", "model": "\ud800"}),
    json.dumps({"message": "hi", "model": ["x"]}),
    json.dumps({"message": "hi", "model": {"a": 1}}),
    json.dumps({"message": "hi", "model": 10**30}),
    json.dumps({"message": 1e400}),
    json.dumps({"message": 10**30}),
    json.dumps({"message": -1}),
    json.dumps({"message": None}),
    json.dumps({"message": ["hi"]}),
    json.dumps({"message": {"text": "hi"}}),
    json.dumps({"message": "a\x00b"}),
    json.dumps({"message": "x" * 300_001}),
    json.dumps({"message": "  \n "}),
    json.dumps({"action": "\ud800"}),
    json.dumps({"action": ["stop"]}),
    json.dumps({"action": None}),
    json.dumps({"action": "²"}),
    json.dumps({"HEADERS": "\ud800"}),
    json.dumps({"message": "hi", "model": "²"}),
    json.dumps({"action": "approval"}),
    json.dumps({"action": "approval", "turn": 1, "decision": "approve"}),
    json.dumps({"action": "approval", "turn": "\ud800", "decision": "reject"}),
    json.dumps({"action": "approval", "turn": 10**30, "decision": "approve"}),
    json.dumps({"action": "approval", "turn": True, "decision": "approve"}),
    json.dumps({"action": "approval", "turn": 1, "decision": ["approve"]}),
    json.dumps({"action": "approval", "turn": [1], "decision": "\ud800"}),
]


@pytest.mark.django_db(transaction=True)
async def test_the_socket_answers_every_hostile_frame_and_stays_open_with_nothing_stored(owner, other_user, settings):
    settings.OPENAI_BASE_URL, settings.HAICO_MODEL, settings.HAICO_MODELS = "http://127.0.0.1:9/v1", "scripted", ["scripted"]
    thread, _ = await sync_to_async(_workspace_of)(owner)
    before = await sync_to_async(_database)()
    socket = await open_socket(thread.pk, owner)
    try:
        for frame in FRAMES:
            await socket.send_to(text_data=frame)
            html = await socket.receive_from(timeout=5)
            assert 'id="chat-notice"' in html, frame[:40]
            html.encode("utf-8")  # sendable: the server cannot put a lone surrogate on the wire
        await socket.send_to(bytes_data=b"\xff\xfe binary")
        assert "could not be read" in await socket.receive_from(timeout=5)
        await socket.send_to(text_data=json.dumps({"action": "stop"}))
        assert "No turn is running." in await socket.receive_from(timeout=5)
    finally:
        await socket.disconnect()
    # Other people's and anonymous sockets are refused whatever they send.
    for user in (other_user, None):
        intruder = await open_socket(thread.pk, user)
        try:
            await intruder.receive_from(timeout=5)
            assert (await intruder.receive_output(timeout=5))["type"] == "websocket.close"
        finally:
            await intruder.disconnect()
    assert await sync_to_async(_database)() == before

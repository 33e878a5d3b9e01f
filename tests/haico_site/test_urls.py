"""Every HTTP route of the site, enumerated from the URL conf, refuses people
who must not use it (docs/adr/0072: every endpoint refuses other users' threads).

The routes are walked from `get_resolver()` through every include, so a new
route is tested the day it is added: a route missing from `ROUTES` (or from
the admin's kwarg table) fails with a message saying where to add it.

For a route on something a person owns (`Owned`), built with the owner's
objects and sent with every method (GET, POST with plausible, CSRF-valid
data, PUT, DELETE; plain and htmx):
- another signed-in person gets 404 (never a 403 that would confirm the
  thread exists: conversations/views.py), sees none of the owner's text, and
  nothing is written to the database (tests.support.web.RowChanges); so does that person with their own
  thread and the owner's step / preference / artifact id;
- an anonymous visitor is sent to log in, and nothing changes;
- the owner gets the page or the change (the same request is not refused),
  which is what makes the refusals above mean something; the owner's
  change without its CSRF token (a forged cross-site form) is refused.
Admin routes refuse everyone but staff; staff reach them. The owner's
world is made once per module; each test runs in a savepoint of it and each
request in another, both rolled back afterwards, so every one starts from
the same rows. The WebSocket routes are in tests/haico_site/test_asgi.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.shortcuts import resolve_url
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.urls.resolvers import RegexPattern, RoutePattern

from agent.models import CatalogueModel, Provider
from conversations import services as conversation_services
from conversations import sharing
from conversations.approval import account_hold_for_approval
from conversations.models import BranchLink, ModelUsage, ModerationAction
from conversations.signup import invite_create
from conversations.tokens import token_create
from conversations.turns import slot
from haico_site.views import STALE_PAGE
from tests.support.web import HTMX, RowChanges, answered_as_missing, answered_as_view_only
from workspace import selectors
from workspace.models import (
    DocumentRevision,
    ObjectiveRevision,
    PlanChange,
    Thread,
    WorkspaceSnapshot,
)
from workspace.selectors import Access
from workspace.services import artifacts as artifact_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db

# In every text the owner's workspace holds, so a response that leaks any of it shows.
SECRET = "owner-secret-7f3a"
METHODS = ("GET", "POST", "PUT", "DELETE")


# --- walking the URL conf -----------------------------------------------------------


@dataclass(frozen=True)
class Route:
    key: str  # the namespaced name, or the full pattern of an unnamed route
    pattern: str
    levels: tuple  # the pattern of each level, outermost first
    callback: Callable
    kwargs: tuple[str, ...]
    admin_model: type | None = None  # for an admin route under <app_label>/<model_name>/

    @property
    def is_admin(self) -> bool:
        return self.key.startswith("admin:") or self.pattern.startswith("admin/")

    def build(self, values: dict) -> str:
        """The path with `values` filled in, checked by resolving it back."""
        path = "/" + "".join(_fill(level, values) for level in self.levels)
        match = resolve(path)
        assert match.func is self.callback, f"{self.key}: {path} resolves to {match.view_name}, not to this route"
        return path


def _fill(pattern, values: dict) -> str:
    if isinstance(pattern, RoutePattern):
        text = str(pattern)
        for name, converter in pattern.converters.items():
            value = str(converter.to_url(values[name]))
            text = re.sub(rf"<(?:\w+:)?{name}>", lambda _match, value=value: value, text)
        return text
    assert isinstance(pattern, RegexPattern), pattern
    text = str(pattern).lstrip("^").rstrip("$")
    return re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: str(values[m.group(1)]), text)


def _admin_model(resolver: URLResolver, namespace: str):
    """The model whose ModelAdmin urls this include holds (<app_label>/<model_name>/)."""
    match = re.fullmatch(r"(\w+)/(\w+)/", str(resolver.pattern))
    if namespace != "admin:" or match is None:
        return None
    try:
        model = apps.get_model(*match.groups())
    except LookupError:
        return None
    return model if admin.site.is_registered(model) else None


def site_routes(resolver=None, *, namespace="", levels=(), kwargs=(), admin_model=None) -> list[Route]:
    resolver = resolver or get_resolver()
    found = []
    for entry in resolver.url_patterns:
        names = tuple(entry.pattern.regex.groupindex)
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            found += site_routes(
                entry,
                namespace=inner,
                levels=(*levels, entry.pattern),
                kwargs=(*kwargs, *names),
                admin_model=_admin_model(entry, inner) or admin_model,
            )
        else:
            assert isinstance(entry, URLPattern)
            full = (*levels, entry.pattern)
            pattern = "".join(str(p) for p in full)
            key = f"{namespace}{entry.name}" if entry.name else pattern
            found.append(Route(key, pattern, full, entry.callback, (*kwargs, *names), admin_model))
    return found


ALL_ROUTES = site_routes()
SITE_ROUTES = [r for r in ALL_ROUTES if not r.is_admin]
ADMIN_ROUTES = [r for r in ALL_ROUTES if r.is_admin]


# --- what each route is --------------------------------------------------------------


@dataclass(frozen=True)
class Public:
    """Anyone may use it; it takes no id of anything a person owns."""

    kwargs: dict = field(default_factory=dict)  # kwarg -> a literal value
    # Where it is asked instead of here, if anywhere else. The health probe
    # is async and opens the process's checkpointer: through this sync
    # client each request runs in an event loop of its own, closed after it,
    # and on PostgreSQL closing that loop can wait for good on the pool it
    # began to open (the same reason the hostile-input walk leaves it out,
    # docs/adr/0065). Its answers to anyone are tested on the test's own
    # loop in tests/haico_site/test_health.py.
    asked_in: str = ""


@dataclass(frozen=True)
class Account:
    """Signed-in only, about the person asking (their list, their password):
    no id of anything owned is in the URL."""


@dataclass(frozen=True)
class Owned:
    """A route on something a person owns.

    kwargs: kwarg -> key of the owner's object in `world` (its pk is used),
    or a callable of `world` giving the value (a turn number).
    query: query parameter -> key of the owner's object in `world`.
    params: query parameters with literal values that name nothing owned (a format).
    post: plausible form data (values may be callables of `world`), with
    which the owner's POST succeeds; None if the view takes no POST.
    writes: the owner's POST changes the database (so the other person's
    unchanged database is a refusal, not a no-op).
    settings: Django settings the route needs to do its work (e.g. a model offered).
    """

    kwargs: dict
    query: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    post: dict | None = None
    writes: bool = True
    settings: dict = field(default_factory=dict)
    # What the people the thread is shared with may do (docs/adr/0084):
    # None, the rule (GET views, every other method edits); Access.OWN for
    # the owner's routes (sharing, rename, delete, the archive). personal:
    # the row is the owner's own (their feedback): no one else reaches it.
    level: Access | None = None
    personal: bool = False


@dataclass(frozen=True)
class StaffOnly:
    """A read-only page for staff about something a person owns: staff get
    it; everyone else 404 (its owner too), staff without the permission to
    view threads 403 (as the admin answers them), anonymous visitors the
    login; nothing but GET. writes: what a staff visit records (the
    moderation log)."""

    kwargs: dict
    writes: bool = True


T = {"thread_id": "thread"}
OFFERED_MODEL = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "HAICO_MODEL": "walk-model", "HAICO_MODELS": []}
STEP = {**T, "pk": "step"}
PREF = {**T, "pk": "preference"}

ROUTES: dict[str, Public | Account | Owned | StaffOnly] = {
    "": Public(),  # the site root redirects to the thread list
    "signup": Public(),
    "waiting": Account(),
    "usage": Account(),
    "login": Public(),
    "logout": Public(),
    "password_change": Account(),
    "password_change_done": Account(),
    "password_reset": Public(),
    "password_reset_done": Public(),
    "password_reset_confirm": Public({"uidb64": "MQ", "token": "set-password"}),
    "password_reset_complete": Public(),
    # The MCP endpoint's protected-resource metadata (RFC 9728): the same for everyone.
    "mcp-resource-metadata": Public(),
    "mcp-resource-metadata-for-path": Public(),
    # Operating it: the health probe and where browsers report CSP violations.
    "healthz": Public(asked_in="tests/haico_site/test_health.py"),
    "csp-report": Public(),
    "conversations:list": Account(),
    "conversations:create": Account(),
    "conversations:switcher": Account(),
    "conversations:layout": Account(),
    "conversations:import": Account(),
    "tokens": Account(),
    "token-revoke": Owned({"pk": "token"}, post={}),
    "conversations:export": Owned(T, writes=False, level=Access.OWN),
    "conversations:rename": Owned(T, post={"title": "Renamed"}, level=Access.OWN),
    "conversations:delete": Owned(T, post={}, level=Access.OWN),
    "conversations:share": Owned(T, level=Access.OWN),
    "conversations:share-add": Owned(T, post={"who": lambda w: w["newcomer"].username, "role": "editor"}, level=Access.OWN),
    # The dialog's lines are the names the thread is shared under (docs/adr/0137).
    "conversations:share-role": Owned({**T, "pk": "membership_name"}, post={"role": "editor"}, level=Access.OWN),
    "conversations:share-remove": Owned({**T, "pk": "membership_name"}, post={}, level=Access.OWN),
    # A dialog from before the names posts a member's id: refused, the list shown again.
    "conversations:share-line-from-before": Owned(
        {**T, "pk": "membership", "action": lambda w: "remove"}, post={}, level=Access.OWN, writes=False
    ),
    "conversations:share-link-make": Owned(T, post={}, level=Access.OWN),
    "conversations:share-link-revoke": Owned(T, post={}, level=Access.OWN),
    # The read-only link: signed-in people only; a link that does not work is a 404
    # (tests/conversations/test_sharing.py follows a real one).
    "conversations:share-link": Public({"key": "no-such-link"}),
    "conversations:mode": Owned(T, post={"mode": "plan"}),
    "conversations:model": Owned(T, post={"model": "walk-model"}, settings=OFFERED_MODEL),
    "conversations:staff-view": StaffOnly(T),
    "conversations:activity": Owned(T),
    "conversations:chat-from": Owned({**T, "turn_index": "turn"}, writes=False),
    "conversations:chat-earlier": Owned({**T, "turn_index": lambda w: w["turn"].pk + 1}, writes=False),
    "conversations:feedback": Owned(
        {**T, "turn_index": lambda w: 1}, post={"scope": "turn", "aspect": "correctness", "rating": "3", "comment": "ok"}
    ),
    "conversations:feedback-edit": Owned(
        {**T, "pk": "feedback"},
        post={"scope": "plan", "aspect": "tone", "rating": "2", "comment": "changed"},
        personal=True,
    ),
    "conversations:feedback-delete": Owned({**T, "pk": "feedback"}, post={}, personal=True),
    "conversations:trajectory-map": Owned(T),
    "conversations:trajectory-turn": Owned({**T, "turn_index": "turn"}, writes=False),
    # No model is configured here, so the owner's request is answered with
    # that message and nothing is branched (tests/conversations/test_views_reruns.py).
    "conversations:turn-regenerate": Owned({**T, "turn_index": "turn"}, post={}, writes=False),
    "conversations:turn-edit": Owned({**T, "turn_index": "turn"}, post={"message": "Edited"}, writes=False),
    "thread-page": Owned(T),
    "workspace:objective": Owned(T),
    "workspace:objective-update": Owned(T, post={"text": "Another objective"}),
    "workspace:objective-history": Owned(T),
    "workspace:preferences": Owned(T),
    "workspace:preference-add": Owned(T, post={"title": "Another preference", "kind": "hard"}),
    "workspace:preference-update": Owned(PREF, post={"title": "Edited", "subtitle": "", "kind": "soft"}),
    "workspace:preference-delete": Owned(PREF, post={}),
    "workspace:preference-lock": Owned(PREF, post={"locked": "1"}),
    "workspace:plan": Owned(T),
    # With `after` (the entries newer than an open history shows, docs/adr/0092):
    # an id only as a place in the order, not a row looked up, so 0 names nothing.
    "workspace:plan-history": Owned(T, params={"after": "0"}),
    "workspace:plan-add": Owned(T, post={"text": "Another step"}),
    "workspace:plan-add-child": Owned(STEP, post={"text": "A sub-step"}),
    "workspace:plan-update": Owned(STEP, post={"text": "Edited"}),
    "workspace:plan-done": Owned(STEP, post={"done": "1"}),
    "workspace:plan-delete": Owned(STEP, post={}),
    "workspace:plan-indent": Owned(STEP, post={}),
    "workspace:plan-outdent": Owned({**T, "pk": "sub_step"}, post={}),
    "workspace:plan-move": Owned(STEP, post={"direction": "up"}),
    "workspace:plan-place": Owned(STEP, post={"before": ""}),
    "workspace:document-preview": Owned(T, post={"content": "# Typed, not saved"}, writes=False),
    "workspace:document-save": Owned(
        T, post={"title": "Edited", "content": "Edited text", "base_version": lambda w: w["document"].version}
    ),
    "workspace:document-history": Owned(T),
    "workspace:document-diff": Owned(T),
    "workspace:document-restore": Owned(T, post={"version": 1, "base_version": lambda w: w["document"].version}),
    "workspace:document-review-keep": Owned(T, post={"turn": 1, "hunk": 0}),
    "workspace:document-review-undo": Owned(T, post={"turn": 1, "hunk": 0}),
    "workspace:centre": Owned(T, query={"artifact": "artifact"}),
    "workspace:document-export": Owned(T, params={"format": "markdown"}, writes=False),
    "workspace:artifact-export": Owned({**T, "artifact_id": "artifact"}, params={"format": "json"}, writes=False),
    "workspace:live": Owned(T),
    "workspace:snapshots": Owned(T),
    "workspace:snapshot": Owned({**T, "turn_index": lambda w: w[WorkspaceSnapshot].turn_index}),
}

# Admin routes are derived from the admin site, so a newly registered model
# is covered without an entry here; only their kwargs need a source.
# Each source takes the route's model (a thread for routes outside a model's
# admin, e.g. view_on_site) and the `world` fixture.
ADMIN_KWARGS: dict[str, Callable] = {
    "object_id": lambda model, w: w[model].pk,
    "id": lambda model, w: w["owner"].pk,  # auth_user_password_change
    "content_type_id": lambda model, w: ContentType.objects.get_for_model(model).pk,  # view_on_site
    "app_label": lambda model, w: "workspace",
    "url": lambda model, w: "no-such-page/",  # the admin's catch-all
}
ADMIN_PUBLIC = {"admin:login", "admin:logout"}
# Staff get 404 here by design: no model has get_absolute_url(), and the
# catch-all is for URLs that do not exist.
ADMIN_STAFF_NOT_FOUND = {"admin:view_on_site", "admin/(?P<url>.*)$"}
# Whatever the form, the action or the deletion, a non-staff POST must change nothing.
ADMIN_POST = {"title": "Hijacked", "locked": "on", "post": "yes", "action": "soft_delete_selected"}


def missing(route: Route) -> str:
    return (
        f"The route {route.key!r} ({route.pattern}) is not in ROUTES of {__name__}: add it there, "
        "saying whether it is Public, Account or Owned and how to fill its kwargs, so it is tested "
        "against other users."
    )


# --- the owner's workspace, another person and their own thread ------------------------


@pytest.fixture(scope="module")
def _module_world(django_db_setup, django_db_blocker):
    """The personas and the world, made once per module (and xdist worker) in a
    transaction that is rolled back after the module's last test. Each test
    runs in a savepoint inside it (pytest-django's own atomic nests there)
    and each request in one more, rolled back too, so no test sees another's
    writes; making the world afresh for each of some 300 cases was most of
    this module's time."""
    from tests.conftest import PASSWORD

    with django_db_blocker.unblock(), transaction.atomic():
        with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
            people = get_user_model().objects
            owner = people.create_user(username="owner", password=PASSWORD)
            other_user = people.create_user(username="intruder", password=PASSWORD)
            staff = people.create_superuser(username="staff", password=PASSWORD, email="staff@example.com")
            rows = _make_world(owner, other_user, staff)
        yield SimpleNamespace(owner=owner, other_user=other_user, staff=staff, world=rows)
        transaction.set_rollback(True)


@pytest.fixture
def owner(_module_world):
    return _module_world.owner


@pytest.fixture
def other_user(_module_world):
    return _module_world.other_user


@pytest.fixture
def staff(_module_world):
    return _module_world.staff


@pytest.fixture
def world(_module_world):
    return _module_world.world


def _make_world(owner, other_user, staff):
    thread = conversation_services.thread_create(owner=owner, title=f"Thread {SECRET}")
    objective_services.objective_set(thread=thread, text=f"Objective {SECRET}")
    preference = preference_services.preference_add(
        thread=thread, title=f"Preference {SECRET}", subtitle=f"Why {SECRET}", kind="soft", respect_lock=False
    )
    # Step 2 can be indented and moved up; its sub-step 2.1 can be outdented.
    plan_services.todo_add(thread=thread, text=f"Step one {SECRET}")
    step = plan_services.todo_add(thread=thread, text=f"Step two {SECRET}")
    sub_step = plan_services.todo_add(thread=thread, text=f"Step two point one {SECRET}", parent=step)
    document_services.document_save(thread=thread, title=f"Document {SECRET}", content=f"# Text {SECRET}")
    artifact = artifact_services.artifact_create(
        thread=thread,
        artifact_type="data_table",
        title=f"Table {SECRET}",
        payload={"columns": ["Name"], "rows": [[SECRET]]},
        turn_index=1,
    )
    turn, snapshot = slot.turn_begin(thread=thread, user_message=f"Message {SECRET}")
    # The agent's turn changes the document: a review to keep or undo.
    document_services.document_save(
        thread=thread, content=f"# Text {SECRET}\n\nAn agent paragraph.", author=DocumentRevision.Author.AGENT
    )
    slot.turn_finish(thread=thread, turn_index=turn)
    activity = conversation_services.activity_log(thread=thread, message=f"Warning {SECRET}", level="warning", turn_index=1)
    feedback = conversation_services.feedback_add(thread=thread, user=owner, turn_index=1, rating=4, comment=SECRET)
    fork = conversation_services.thread_create(owner=owner, title=f"Fork {SECRET}")
    branch = BranchLink.objects.create(thread=fork, parent=thread, branch_point_turn=1, reason=SECRET)
    moderation = conversation_services.moderation_record(
        thread=thread, staff_user=staff, action=ModerationAction.Action.LOCK_PREFERENCE, detail=SECRET
    )
    group = Group.objects.create(name=f"Group {SECRET}")
    token, _secret = token_create(user=owner, name=f"Token {SECRET}")
    invite, _secret = invite_create(created_by=staff, email="invited@example.com", note=f"Invite {SECRET}")
    account = account_hold_for_approval(user=get_user_model().objects.create_user(username=f"waiting-{SECRET}"))
    provider = Provider.objects.create(name=f"Provider {SECRET}", base_url="http://127.0.0.1:9/v1", api_key=f"sk-{SECRET}")
    # Not offered: with no model, Regenerate and Edit answer without branching (ROUTES).
    catalogue_model = CatalogueModel.objects.create(provider=provider, name=f"model-{SECRET}", enabled=False)
    model_call = ModelUsage.objects.create(
        user=owner,
        thread=thread,
        turn_index=turn,
        provider=provider,
        provider_name=provider.name,
        model=f"model-{SECRET}",
        input_tokens=10,
        output_tokens=2,
    )
    # The login rate limit's records (django-axes), as staff see them in the admin.
    attempt_fields = {
        "username": f"user-{SECRET}",
        "ip_address": "127.0.0.1",
        "user_agent": "probe",
        "http_accept": "*/*",
        "path_info": "/accounts/login/",
    }
    login_records = (
        AccessAttempt.objects.create(**attempt_fields, get_data="", post_data="", failures_since_start=1),
        AccessLog.objects.create(**attempt_fields),
        AccessFailureLog.objects.create(**attempt_fields, locked_out=False),
    )

    # The other person's own thread, with one of everything, for the
    # "own thread, owner's row id" requests.
    theirs = conversation_services.thread_create(owner=other_user, title="Mine")
    preference_services.preference_add(thread=theirs, title="Mine", respect_lock=False)
    plan_services.todo_add(thread=theirs, text="Mine")
    artifact_services.artifact_create(
        thread=theirs, artifact_type="data_table", title="Mine", payload={"columns": ["A"], "rows": []}, turn_index=0
    )

    # The people the thread is shared with, one of each kind (docs/adr/0084):
    # an editor, a viewer, a viewer by the link, one removed, one not added yet.
    people = {
        name: get_user_model().objects.create_user(username=f"{name}-person")
        for name in ("editor", "viewer", "link_viewer", "removed", "newcomer")
    }
    sharing.thread_member_add(thread=thread, who=people["editor"].username, role="editor", by=owner)
    membership = sharing.thread_member_add(thread=thread, who=people["viewer"].username, role="viewer", by=owner)
    removed = sharing.thread_member_add(thread=thread, who=people["removed"].username, role="editor", by=owner)
    sharing.thread_member_remove(thread=thread, member_id=removed.pk, by=owner)
    sharing.share_link_open(user=people["link_viewer"], key=sharing.share_link_create(thread=thread, by=owner))

    thread.refresh_from_db()
    rows = {
        **people,
        "membership": membership,
        "membership_name": membership.names.get(),
        "owner": owner,
        "thread": thread,
        "preference": preference,
        "step": step,
        "sub_step": sub_step,
        "document": selectors.document_for(thread=thread),
        "artifact": artifact,
        "feedback": feedback,
        "token": token,
        "their_thread": theirs,
        # A turn is addressed by its number in the thread (Regenerate, Edit).
        "turn": SimpleNamespace(pk=turn),
    }
    # One row of every model the admin shows, by model.
    revision = rows["document"].revisions.order_by("-version").first()
    objective_revision = ObjectiveRevision.objects.filter(thread=thread).first()
    for obj in (
        thread,
        selectors.objective_for(thread=thread),
        objective_revision,
        preference,
        step,
        PlanChange.objects.filter(thread=thread).first(),
        rows["document"],
        revision,
        artifact,
        snapshot,
        activity,
        feedback,
        branch,
        moderation,
        group,
        token,
        owner,
        invite,
        account,
        provider,
        catalogue_model,
        model_call,
        membership,
        *login_records,
    ):
        rows[type(obj)] = obj
    return rows


# --- requests ------------------------------------------------------------------------


def client_for(user) -> Client:
    """A client that enforces CSRF like a browser, holding a valid token."""
    client = Client(enforce_csrf_checks=True)
    # The login form sets the CSRF cookie (asked before signing in: signed
    # in, the login page sends you on to your threads).
    client.get(resolve_url(settings.LOGIN_URL))
    if user is not None:
        client.force_login(user)
    client.csrf = client.cookies[settings.CSRF_COOKIE_NAME].value
    return client


def send(client, method: str, path: str, *, query=None, data=None, htmx=False, csrf=True):
    """One request in a savepoint that is rolled back; returns (response, rows changed?)."""
    extra = {**({"HTTP_X_CSRFTOKEN": client.csrf} if csrf else {}), **(HTMX if htmx else {})}
    with transaction.atomic():
        rows = RowChanges()
        if method == "GET":
            response = client.get(path, query or {}, **extra)
        else:
            url = path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
            response = client.generic(
                method, url, urlencode(data or {}), content_type="application/x-www-form-urlencoded", **extra
            )
        changed = rows.changed()
        transaction.set_rollback(True)
    return response, changed


def body(response) -> str:
    return b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()


def is_login_redirect(response, login_url: str) -> bool:
    return response.status_code == 302 and response["Location"].split("?")[0] == login_url


def values_for(spec: Owned, world) -> tuple[dict, dict, dict]:
    kwargs = {name: key(world) if callable(key) else world[key].pk for name, key in spec.kwargs.items()}
    query = {**spec.params, **{name: world[key].pk for name, key in spec.query.items()}}
    post = {k: (v(world) if callable(v) else v) for k, v in (spec.post or {}).items()}
    return kwargs, query, post


# --- the table covers the URL conf -------------------------------------------------------


def test_every_route_of_the_url_conf_is_in_the_table():
    unknown = [missing(route) for route in SITE_ROUTES if route.key not in ROUTES]
    assert not unknown, "\n".join(unknown)


def test_every_entry_of_the_table_is_still_a_route():
    stale = set(ROUTES) - {route.key for route in SITE_ROUTES}
    assert not stale, f"ROUTES lists routes the URL conf no longer has (remove them): {sorted(stale)}"


def test_the_table_fills_exactly_the_kwargs_of_each_route():
    problems = []
    for route in SITE_ROUTES:
        spec = ROUTES.get(route.key)
        if spec is None:
            continue
        filled = set(spec.kwargs) if isinstance(spec, (Owned, Public, StaffOnly)) else set()
        for name in sorted(set(route.kwargs) - filled):
            problems.append(f"{route.key}: add how to fill its kwarg {name!r} to its entry in ROUTES of {__name__}")
        for name in sorted(filled - set(route.kwargs)):
            problems.append(f"{route.key}: ROUTES fills {name!r}, which the route does not take")
    assert not problems, "\n".join(problems)


def test_every_admin_kwarg_has_a_source():
    unknown = sorted({name for route in ADMIN_ROUTES for name in route.kwargs} - set(ADMIN_KWARGS))
    assert not unknown, f"admin routes take kwargs ADMIN_KWARGS of {__name__} cannot fill; add them: {unknown}"


def test_the_walks_change_check_sees_a_request_that_writes_and_one_that_does_not(world, owner):
    """The check behind "changed nothing" is not blind: the owner adding a
    step writes a row, reading the plan writes none (on either database)."""
    client = client_for(owner)
    thread = world["thread"]
    response, changed = send(
        client, "POST", reverse("workspace:plan-add", args=[thread.pk]), data={"text": "Another step"}, htmx=True
    )
    assert response.status_code == 200 and changed
    response, changed = send(client, "GET", reverse("workspace:plan", args=[thread.pk]), htmx=True)
    assert response.status_code == 200 and not changed


def test_the_walk_sees_the_routes_that_take_owned_ids():
    # The walk itself is what the rest relies on: it must find the nested with the thread id of their include and the row id.
    # workspace routes with the thread id of their include and the row id,
    # and the model of each admin route.
    keys = {route.key: route for route in ALL_ROUTES}
    assert keys["workspace:plan-move"].kwargs == ("thread_id", "pk")
    assert keys["conversations:activity"].kwargs == ("thread_id",)
    assert keys["admin:workspace_thread_change"].admin_model is Thread
    assert keys["admin:workspace_thread_change"].is_admin and not keys["thread-page"].is_admin


# --- routes on what a person owns ---------------------------------------------------------


def _route_id(route: Route) -> str:
    return route.key or "root"


@pytest.mark.parametrize("route", SITE_ROUTES, ids=_route_id)
def test_route_refuses_other_people_and_anonymous_visitors(route, world, owner, other_user, staff, settings):
    spec = ROUTES.get(route.key)
    if spec is None:
        pytest.fail(missing(route))
    for name, value in getattr(spec, "settings", {}).items():
        setattr(settings, name, value)
    filled = set(getattr(spec, "kwargs", {}))
    if filled != set(route.kwargs):
        pytest.fail(
            f"{route.key} takes {sorted(route.kwargs)} but ROUTES of {__name__} fills {sorted(filled)}: "
            "add how to fill each kwarg to its entry"
        )
    if isinstance(spec, Public):
        _check_public(route, spec, world)
    elif isinstance(spec, Account):
        _check_account(route, world, other_user)
    elif isinstance(spec, StaffOnly):
        _check_staff_only(route, spec, world, owner, other_user, staff)
    else:
        _check_owned(route, spec, world, owner, other_user)


def _check_public(route, spec, world):
    assert not ({"thread_id", "pk"} & set(route.kwargs)), f"{route.key} takes an owned id but is marked Public"
    if spec.asked_in:
        assert (Path(settings.BASE_DIR) / spec.asked_in).is_file(), f"{route.key}: {spec.asked_in} is gone"
        return
    response, _ = send(client_for(None), "GET", route.build(spec.kwargs))
    assert response.status_code < 500
    assert SECRET not in body(response)


def _check_account(route, world, other_user):
    login = resolve_url(settings.LOGIN_URL)
    path = route.build({})
    anonymous = client_for(None)
    for method in METHODS:
        response, changed = send(anonymous, method, path, data={"title": "x"})
        assert is_login_redirect(response, login) or response.status_code in (401, 403, 405), (route.key, method)
        assert not changed, f"{route.key}: an anonymous {method} changed the database"
    response, _ = send(client_for(other_user), "GET", path)
    assert response.status_code < 500
    assert SECRET not in body(response), f"{route.key} shows the owner's workspace to another person"


def _check_staff_only(route, spec, world, owner, other_user, staff):
    kwargs = {name: world[key].pk for name, key in spec.kwargs.items()}
    path = route.build(kwargs)
    login = resolve_url(settings.LOGIN_URL)
    for user in (owner, other_user):
        for method in METHODS:
            for htmx in (False, True):
                response, changed = send(client_for(user), method, path, data={}, htmx=htmx)
                where = f"{route.key} {method}{' (htmx)' if htmx else ''} by {user.get_username()}"
                assert response.status_code == 405 or answered_as_missing(response), f"{where}: {response.status_code}"
                assert SECRET not in body(response), f"{where} shows the owner's text"
                assert not changed, f"{where} changed the database"
    for method in METHODS:
        response, changed = send(client_for(None), method, path, data={})
        assert is_login_redirect(response, login) or response.status_code in (401, 403, 405), (route.key, method)
        assert not changed, f"{route.key} {method} by an anonymous visitor changed the database"
    bare_staff = type(staff).objects.create_user(username="staff-without-permissions", is_staff=True)
    response, changed = send(client_for(bare_staff), "GET", path)
    assert response.status_code == 403 and SECRET not in body(response) and not changed, (
        f"{route.key}: staff without the permission to view threads get {response.status_code}"
    )
    staff_client = client_for(staff)
    response, changed = send(staff_client, "GET", path)
    assert response.status_code == 200 and SECRET in body(response), f"{route.key}: staff do not get the page"
    assert changed == spec.writes, f"{route.key}: a staff visit {'records nothing' if spec.writes else 'writes'}"
    for method in ("POST", "PUT", "DELETE"):
        response, changed = send(staff_client, method, path, data={})
        assert response.status_code == 405 and not changed, f"{route.key} {method} by staff: {response.status_code}"


def _check_owned(route, spec, world, owner, other_user):
    kwargs, query, post = values_for(spec, world)
    path = route.build(kwargs)
    login = resolve_url(settings.LOGIN_URL)
    intruder, anonymous, owner_client = client_for(other_user), client_for(None), client_for(owner)

    # Another person's thread: answered as missing whatever the method (404, or
    # for htmx the short "no longer exists" message), nothing shown, nothing changed.
    refused_with = {}
    for method in METHODS:
        for htmx in (False, True):
            response, changed = send(intruder, method, path, query=query, data=post, htmx=htmx)
            where = f"{route.key} {method}{' (htmx)' if htmx else ''} by another person"
            assert response.status_code == 405 or answered_as_missing(response), (
                f"{where}: {response.status_code}, not answered as missing"
            )
            assert SECRET not in body(response), f"{where} shows the owner's text"
            assert not changed, f"{where} changed the database"
            if not htmx:
                refused_with[method] = response.status_code

    # Their own thread with the owner's row id (step, preference, artifact): 404 too.
    if set(spec.kwargs) - {"thread_id"} or spec.query:
        own_path = route.build({**kwargs, "thread_id": world["their_thread"].pk})
        for method in METHODS:
            response, changed = send(intruder, method, own_path, query=query, data=post)
            where = f"{route.key} {method} on the other person's own thread with the owner's ids"
            assert response.status_code in (404, 405), f"{where}: {response.status_code}, not 404"
            assert SECRET not in body(response), f"{where} shows the owner's text"
            assert not changed, f"{where} changed the database"

    # Anonymous: sent to log in (or 401/403), nothing changed.
    for method in METHODS:
        response, changed = send(anonymous, method, path, query=query, data=post)
        assert is_login_redirect(response, login) or response.status_code in (401, 403, 405), (
            f"{route.key} {method} by an anonymous visitor: {response.status_code}"
        )
        assert not changed, f"{route.key} {method} by an anonymous visitor changed the database"

    # The owner: the same requests go through, so the refusals above are real.
    accepted = []
    for method in METHODS:
        response, changed = send(owner_client, method, path, query=query, data=post, htmx=True)
        if response.status_code == 405:
            continue
        accepted.append(method)
        assert response.status_code in (200, 302), f"{route.key} {method} by the owner: {response.status_code}"
        assert not is_login_redirect(response, login)
        assert refused_with[method] == 404, f"{route.key} {method}: another person got {refused_with[method]}, not 404"
        if method == "GET":
            assert SECRET in body(response), f"{route.key}: the owner's GET does not show the owner's workspace"
            continue
        if spec.writes:
            assert changed, f"{route.key} {method}: the owner's plausible request changed nothing; fix its post data"
        # The same request without the CSRF token (a forged cross-site form) is refused.
        response, changed = send(owner_client, method, path, query=query, data=post, htmx=True, csrf=False)
        # htmx gets the "reload the page" message on its page instead of an error page (haico_site.views).
        refused = response.status_code == 403 or STALE_PAGE in response.get("HX-Trigger", "")
        assert refused, f"{route.key} {method} without a CSRF token: {response.status_code}, not refused"
        assert not changed, f"{route.key} {method} without a CSRF token changed the database"
    assert accepted, f"{route.key} accepts none of {METHODS}"
    assert ("POST" in accepted) == (spec.post is not None), (
        f"{route.key}: the view {'takes' if 'POST' in accepted else 'refuses'} POST; say so in ROUTES (post=...)"
    )


# --- the people a thread is shared with: the role matrix (docs/adr/0084) ---------------

# Who may do what: a persona's level on the owner's thread (None: none at all).
# Staff are no member either: they read threads in the admin and its read-only view.
PERSONAS = {
    "editor": Access.EDIT,
    "viewer": Access.VIEW,
    "link_viewer": Access.VIEW,
    "removed": None,
    "stranger": None,
    "staff": None,
}
THREAD_ROUTES = [r for r in SITE_ROUTES if isinstance(ROUTES.get(r.key), Owned) and "thread_id" in r.kwargs]


def needed_level(spec: Owned, method: str) -> Access:
    if spec.level is not None:
        return spec.level
    return Access.VIEW if method == "GET" else Access.EDIT


@pytest.mark.parametrize("route", THREAD_ROUTES, ids=_route_id)
def test_route_answers_each_person_the_thread_is_shared_with_by_their_role(route, world, owner, other_user, staff, settings):
    """Reads to viewers (the link's too), writes to editors, the owner's
    routes to the owner only; anyone refused gets the stranger's 404 (a
    viewer's write: told they may only view) and the database is unchanged.
    The owner's own answers are the walk's above."""
    spec = ROUTES[route.key]
    assert isinstance(spec, Owned)
    for name, value in spec.settings.items():
        setattr(settings, name, value)
    kwargs, query, post = values_for(spec, world)
    path = route.build(kwargs)
    people = {"stranger": other_user, "staff": staff}
    for persona, level in PERSONAS.items():
        client = client_for(people.get(persona) or world[persona])
        for method in METHODS:
            response, changed = send(client, method, path, query=query, data=post, htmx=True)
            if response.status_code == 405:
                continue
            where = f"{route.key} {method} by the {persona}"
            allowed = level is not None and level >= needed_level(spec, method) and not spec.personal
            if not allowed:
                if level == Access.VIEW and needed_level(spec, method) == Access.EDIT:
                    assert answered_as_view_only(response), f"{where}: {response.status_code}, not told it is view only"
                else:
                    assert answered_as_missing(response), f"{where}: {response.status_code}, not answered as missing"
                assert SECRET not in body(response), f"{where} shows the owner's text"
                assert not changed, f"{where} changed the database"
                continue
            assert response.status_code in (200, 302) and not answered_as_missing(response), (
                f"{where}: {response.status_code}, refused"
            )
            if method == "GET":
                assert SECRET in body(response), f"{where} does not show the thread"
            elif spec.writes:
                assert changed, f"{where} changed nothing"


# --- the admin --------------------------------------------------------------------------


def _admin_values(route, world) -> dict:
    values = {}
    for name in route.kwargs:
        if name not in ADMIN_KWARGS:
            pytest.fail(f"{route.key}: the admin kwarg {name!r} has no source; add it to ADMIN_KWARGS of {__name__}")
        if name == "object_id" and route.admin_model is not None and route.admin_model not in world:
            pytest.fail(f"{route.key}: add a row of {route.admin_model.__name__} to the `world` fixture of {__name__}")
        values[name] = ADMIN_KWARGS[name](route.admin_model or type(world["thread"]), world)
    return values


@pytest.mark.parametrize("route", ADMIN_ROUTES, ids=_route_id)
def test_admin_route_refuses_everyone_but_staff(route, world, owner, other_user, staff):
    if route.key in ADMIN_PUBLIC:
        response, _ = send(client_for(None), "GET", route.build({}))
        assert response.status_code in (200, 302, 405)
        assert SECRET not in body(response)
        return
    path = route.build(_admin_values(route, world))
    admin_login = resolve_url("admin:login")
    for who, user in (("the owner", owner), ("another person", other_user), ("an anonymous visitor", None)):
        client = client_for(user)
        for method, data in (("GET", None), ("POST", {**ADMIN_POST, "_selected_action": world["thread"].pk})):
            response, changed = send(client, method, path, data=data)
            assert is_login_redirect(response, admin_login), f"{route.key} {method} by {who}: {response.status_code}"
            assert SECRET not in body(response), f"{route.key} {method} by {who} shows workspace text"
            assert not changed, f"{route.key} {method} by {who} changed the database"
    response, _ = send(client_for(staff), "GET", path)
    assert not is_login_redirect(response, admin_login) and response.status_code < 500, (route.key, response.status_code)
    if route.key not in ADMIN_STAFF_NOT_FOUND:
        assert response.status_code != 404, f"{route.key}: staff get 404 at {path}; is the kwarg filled right?"

"""The live document: autosave, merges of saves based on an older version,
the conflict view and its choices, the size cap. Method, access, database
effect and what the person sees."""

import json

import pytest
from django.conf import settings

from tests.support.web import HTMX, answered_as_missing, ws_url
from workspace import selectors
from workspace.models import ContentBlob, Document, DocumentRevision
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db


def _save(client, thread, *, htmx=True, **fields):
    headers = HTMX if htmx else {}
    return client.post(ws_url(thread, "document/save/"), fields, **headers)


def _save_json(client, thread, body, *, htmx=True):
    headers = HTMX if htmx else {}
    return client.post(ws_url(thread, "document/save/"), body, content_type="application/json", **headers)


def _doc(thread):
    return Document.objects.filter(thread=thread).first()


def test_save_writes_title_and_content_and_bumps_version(owner_client, thread):
    response = _save(owner_client, thread, title="Review", content="# Aims\n\nFind *gaps*.", base_version=0)
    html = response.content.decode()
    assert response.status_code == 200
    doc = _doc(thread)
    assert (doc.title, doc.content, doc.version) == ("Review", "# Aims\n\nFind *gaps*.", 1)
    assert '<div id="doc-save-state" class="doc-save-state" data-state="saved" data-version="1">' in html
    assert 'name="base_version" value="1"' in html  # the next autosave is based on the new version
    assert ">Saved</span>" in html
    # The preview is refreshed out of band; the editor itself is not sent back (the caret stays put).
    assert '<div id="doc-preview" class="doc-preview markdown" hx-swap-oob="true">' in html
    assert "<h1>Aims</h1>" in html and "<em>gaps</em>" in html
    assert "<textarea" not in html and 'name="title"' not in html


def test_successive_saves_chain_versions(owner_client, thread):
    _save(owner_client, thread, title="T", content="one", base_version=0)
    response = _save(owner_client, thread, title="T", content="two", base_version=1)
    assert response.status_code == 200
    assert (_doc(thread).content, _doc(thread).version) == ("two", 2)


def test_save_stores_browser_line_breaks_as_plain_newlines(owner_client, thread):
    _save(owner_client, thread, title="T", content="a\r\nb\r\n", base_version=0)
    assert _doc(thread).content == "a\nb\n"


def test_save_is_recorded_as_the_persons_revision(owner_client, thread):
    _save(owner_client, thread, title="T", content="mine", base_version=0)
    assert list(DocumentRevision.objects.filter(document__thread=thread).values_list("version", "author")) == [(1, "person")]


REPORT = "# Report\n\nIntro paragraph.\n\nMethods paragraph.\n"


def test_stale_save_of_another_paragraph_is_merged_and_the_editor_gets_the_merged_text(owner_client, thread):
    document_services.document_save(thread=thread, title="Report", content=REPORT)  # version 1
    document_services.document_save(thread=thread, content=REPORT.replace("Methods paragraph.", "Methods <by> agent."))
    response = _save(
        owner_client, thread, title="Report", content=REPORT.replace("Intro paragraph.", "Intro by me."), base_version=1
    )
    html = response.content.decode()
    merged = REPORT.replace("Intro paragraph.", "Intro by me.").replace("Methods paragraph.", "Methods <by> agent.")
    assert response.status_code == 200
    assert (_doc(thread).content, _doc(thread).version) == (merged, 3)
    assert 'data-state="merged"' in html and "Saved, merged with the latest changes" in html
    assert 'name="base_version" value="3"' in html
    # The merged text, for the editor, escaped, in a template that is never submitted.
    assert '<template data-doc-merged data-version="3"><input name="title" value="Report">' in html
    assert "Intro by me.\n\nMethods &lt;by&gt; agent.\n</textarea></template>" in html
    assert "<h1>Report</h1>" in html  # the preview, out of band
    # The conflict view is closed (empty and hidden) out of band.
    assert (
        '<div id="doc-conflict" class="doc-conflict" role="region" aria-label="Document conflict" hidden hx-swap-oob="true">'
        in html
    )


def test_stale_save_of_the_same_words_shows_one_conflict_view_and_keeps_the_database(owner_client, thread):
    document_services.document_save(thread=thread, title="Report", content=REPORT)
    document_services.document_save(thread=thread, content=REPORT.replace("Methods paragraph.", "Methods by <the> agent."))
    response = _save(
        owner_client, thread, title="Report", content=REPORT.replace("Methods paragraph.", "Methods by me."), base_version=1
    )
    html = response.content.decode()
    assert response.status_code == 200  # htmx swaps the view in
    assert 'data-state="conflict"' in html and "Not saved: overlapping edits" in html
    # Later autosaves stay based on the version the person edited, to be merged again.
    assert 'name="base_version" value="1"' in html
    assert html.count('id="doc-conflict"') == 1 and html.count('role="alert"') == 1
    assert "Nothing was saved" in html
    assert '<section class="doc-conflict-version" aria-label="Your version">' in html
    assert "Latest saved (version 2)" in html
    assert 'Methods by <mark class="doc-conflict-part">me</mark>.' in html
    assert 'Methods by <mark class="doc-conflict-part">&lt;the&gt; agent</mark>.' in html
    for name, choice in (("Keep mine", "ours"), ("Keep theirs", "theirs"), ("Keep both", "both")):
        assert f'<button type="button" class="btn btn-small" data-doc-resolve="{choice}">{name}</button>' in html
    assert "Load latest" not in html and "data-doc-merged" not in html
    assert (_doc(thread).content, _doc(thread).version) == (REPORT.replace("Methods paragraph.", "Methods by <the> agent."), 2)


def test_typing_on_during_a_merged_save_is_merged_against_the_text_that_save_carried(owner_client, thread):
    document_services.document_save(thread=thread, title="Report", content=REPORT)  # version 1
    other_tab = REPORT.replace("Methods paragraph.", "Methods from the other tab.")
    document_services.document_save(thread=thread, content=other_tab, base_version=1)  # version 2
    sent = REPORT.replace("Intro paragraph.", "Intro Wor.")
    assert 'data-state="merged"' in _save(owner_client, thread, title="Report", content=sent, base_version=1).content.decode()
    # Typed on while that save was on its way; the editor could not put it on
    # the merged text, so it sends the text its own save carried as the base.
    typed = REPORT.replace("Intro paragraph.", "Intro Wordy.")
    html = _save(owner_client, thread, title="Report", content=typed, base_version=3, base_content=sent).content.decode()
    assert 'data-state="merged"' in html and 'data-version="4"' in html
    assert (_doc(thread).content, _doc(thread).version) == (other_tab.replace("Intro paragraph.", "Intro Wordy."), 4)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"base_content": "x" * (settings.HAICO_DOCUMENT_MAX_CHARS + 1)}, "is too long"),
        ({"base_content": "a\x00b"}, "cannot contain NUL characters"),
        ({"base_content": "the base", "content": None}, "came without the content"),
    ],
)
def test_a_bad_base_text_is_refused_and_nothing_saved(owner_client, thread, fields, message):
    document_services.document_save(thread=thread, title="Report", content=REPORT)
    body = {"title": "Report", "content": "mine", "base_version": 1, **fields}
    response = _save(owner_client, thread, htmx=False, **{k: v for k, v in body.items() if v is not None})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert (_doc(thread).content, _doc(thread).version) == (REPORT, 1)


@pytest.mark.parametrize(
    ("resolve", "methods"),
    [("ours", "Methods by me."), ("theirs", "Methods by the agent."), ("both", "Methods by me the agent.")],
)
def test_a_choice_from_the_conflict_view_writes_and_closes_it(owner_client, thread, resolve, methods):
    document_services.document_save(thread=thread, title="Report", content=REPORT)
    document_services.document_save(thread=thread, content=REPORT.replace("Methods paragraph.", "Methods by the agent."))
    mine = REPORT.replace("Methods paragraph.", "Methods by me.")
    response = _save(owner_client, thread, title="Report", content=mine, base_version=1, resolve=resolve)
    html = response.content.decode()
    assert 'data-state="merged"' in html and 'name="base_version" value="3"' in html
    assert 'aria-label="Document conflict" hidden hx-swap-oob="true"' in html
    assert (_doc(thread).content, _doc(thread).version) == (REPORT.replace("Methods paragraph.", methods), 3)


def test_an_unknown_choice_is_refused_and_nothing_saved(owner_client, thread):
    response = _save(owner_client, thread, htmx=False, title="T", content="x", base_version=0, resolve="mine")
    assert response.status_code == 400
    assert "Choose Keep mine, Keep theirs or Keep both." in response.content.decode()
    assert _doc(thread) is None


def test_title_changed_on_both_sides_shows_both_titles(owner_client, thread):
    document_services.document_save(thread=thread, title="Draft", content="text")
    document_services.document_save(thread=thread, title="Agent's <title>")
    html = _save(owner_client, thread, title="My title", content="text", base_version=1).content.decode()
    assert "Title: yours “My title”, latest saved “Agent&#x27;s &lt;title&gt;”." in html
    assert "Only the title was changed on both sides" in html
    assert _doc(thread).title == "Agent's <title>"


def test_stale_version_without_htmx_is_409(owner_client, thread):
    document_services.document_save(thread=thread, title="T", content="The claim holds.")
    document_services.document_save(thread=thread, content="The claim fails.", base_version=1)
    response = _save(owner_client, thread, htmx=False, title="T", content="The claim is weak.", base_version=1)
    assert response.status_code == 409
    assert _doc(thread).content == "The claim fails."


def test_document_over_the_size_cap_is_refused_and_nothing_saved(owner_client, thread):
    document_services.document_save(thread=thread, title="T", content="short")
    too_long = "x" * (settings.HAICO_DOCUMENT_MAX_CHARS + 1)
    response = _save(owner_client, thread, title="T", content=too_long, base_version=1)
    html = response.content.decode()
    assert 'data-state="error"' in html and 'role="alert"' in html
    assert "Document content is too long" in html and "Nothing was saved." in html
    assert (_doc(thread).content, _doc(thread).version) == ("short", 1)
    assert _save(owner_client, thread, htmx=False, title="T", content=too_long, base_version=1).status_code == 400


def test_document_exactly_at_the_size_cap_is_saved(owner_client, thread):
    exactly = "y" * settings.HAICO_DOCUMENT_MAX_CHARS
    assert 'data-state="saved"' in _save(owner_client, thread, title="T", content=exactly, base_version=0).content.decode()
    assert len(_doc(thread).content) == settings.HAICO_DOCUMENT_MAX_CHARS


@pytest.mark.parametrize(
    ("title", "message"), [("   ", "Document title cannot be empty."), ("t" * 201, "Document title is too long")]
)
def test_bad_title_is_refused_and_nothing_saved(owner_client, thread, title, message):
    document_services.document_save(thread=thread, title="Kept", content="kept")
    response = _save(owner_client, thread, title=title, content="new text", base_version=1)
    html = response.content.decode()
    assert message in html and 'role="alert"' in html
    assert (_doc(thread).title, _doc(thread).content) == ("Kept", "kept")
    assert 'name="base_version" value="1"' in html


@pytest.mark.parametrize("version", [None, "", "abc", "-1", "1.5"])
def test_missing_or_garbled_base_version_is_refused(owner_client, thread, version):
    fields = {"title": "T", "content": "c"}
    if version is not None:
        fields["base_version"] = version
    response = _save(owner_client, thread, htmx=False, **fields)
    assert response.status_code == 400
    assert "reload the page" in response.content.decode()
    assert _doc(thread) is None


def test_save_with_nothing_to_save_is_refused(owner_client, thread):
    response = _save(owner_client, thread, htmx=False, base_version=0)
    assert response.status_code == 400
    assert "Nothing to save" in response.content.decode()
    assert _doc(thread) is None


def test_save_accepts_a_json_body(owner_client, thread):
    response = _save_json(owner_client, thread, {"title": "J", "content": "from json", "base_version": 0}, htmx=False)
    assert response.status_code == 200
    assert (_doc(thread).title, _doc(thread).content) == ("J", "from json")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "not valid JSON"),
        ('["title", "x"]', "must be a JSON object"),
        ('{"title": "T", "content": 42, "base_version": 0}', "content must be text"),
        ('{"title": ["T"], "base_version": 0}', "title must be text"),
    ],
)
def test_save_malformed_json_is_400_and_nothing_saved(owner_client, thread, body, message):
    response = _save_json(owner_client, thread, body, htmx=False)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert _doc(thread) is None


def test_save_other_users_thread_is_404_and_unchanged(other_client, thread):
    document_services.document_save(thread=thread, title="Owner's", content="private")
    response = _save(other_client, thread, title="Hijack", content="gone", base_version=1)
    assert answered_as_missing(response)
    assert _doc(thread).content == "private"


def test_save_anonymous_is_sent_to_login_and_unchanged(client, thread):
    response = _save(client, thread, htmx=False, title="T", content="c", base_version=0)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert _doc(thread) is None


def test_save_refuses_get(owner_client, thread):
    assert owner_client.get(ws_url(thread, "document/save/")).status_code == 405


def test_save_requires_csrf_token(owner, thread):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    response = strict.post(ws_url(thread, "document/save/"), {"title": "T", "content": "c", "base_version": 0})
    assert response.status_code == 403
    assert _doc(thread) is None


def test_saved_document_survives_a_reload_of_the_panel(owner_client, thread):
    _save(owner_client, thread, title="Kept title", content="kept *body*", base_version=0)
    html = owner_client.get(ws_url(thread, "centre/"), **HTMX).content.decode()
    assert 'value="Kept title"' in html and "kept *body*</textarea>" in html
    assert "<em>body</em>" in html
    assert selectors.document_for(thread=thread).version == 1


def test_body_beyond_the_upload_limit_is_refused_cleanly(owner_client, thread, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    response = _save(owner_client, thread, htmx=False, title="T", content="x" * 20_000, base_version=0)
    assert response.status_code == 413  # answered before CSRF's check reads the body (haico_site.middleware)
    assert "too long to send" in response.content.decode()
    assert _doc(thread) is None


def test_a_long_documents_preview_comes_by_its_own_request(owner_client, other_user, thread):
    from django.test import Client

    body = "# Long\n\n" + "word " * 3000
    document_services.document_save(thread=thread, title="Long", content=body)
    page = owner_client.get(ws_url(thread, "centre/")).content.decode()
    assert 'hx-trigger="load"' in page and "<h1>Long</h1>" not in page
    preview = owner_client.get(ws_url(thread, "document/preview/"))
    assert preview.status_code == 200 and "<h1>Long</h1>" in preview.content.decode()
    intruder = Client()
    intruder.force_login(other_user)
    assert intruder.get(ws_url(thread, "document/preview/")).status_code == 404


def test_the_live_preview_renders_the_text_as_typed_and_saves_nothing(owner_client, other_user, thread):
    from django.test import Client

    document_services.document_save(thread=thread, title="Notes", content="saved text")
    typed = "# Typed\n\n- [x] done\n\n<script>alert(1)</script>"
    response = owner_client.post(ws_url(thread, "document/preview/"), {"content": typed}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<h1>Typed</h1>" in html and 'type="checkbox"' in html and "<script" not in html
    assert _doc(thread).content == "saved text" and _doc(thread).version == 1
    assert DocumentRevision.objects.filter(document__thread=thread).count() == 1
    assert "Nothing to preview yet." in owner_client.post(ws_url(thread, "document/preview/"), {"content": ""}).content.decode()

    intruder = Client()
    intruder.force_login(other_user)
    assert intruder.post(ws_url(thread, "document/preview/"), {"content": typed}).status_code == 404


def test_the_live_preview_refuses_text_over_the_documents_limit(owner_client, thread):
    too_long = "x" * (settings.HAICO_DOCUMENT_MAX_CHARS + 1)
    refused = owner_client.post(ws_url(thread, "document/preview/"), {"content": too_long}, **HTMX)
    assert refused.status_code == 200 and "No preview:" in refused.content.decode()
    assert owner_client.post(ws_url(thread, "document/preview/"), {"content": too_long}).status_code == 400
    assert _doc(thread) is None


def test_a_short_documents_preview_is_on_the_page(owner_client, thread):
    document_services.document_save(thread=thread, title="Short", content="# Short")
    assert "<h1>Short</h1>" in owner_client.get(ws_url(thread, "centre/")).content.decode()


# --- history, diff and restore ------------------------------------------------------------

HISTORY = "document/history/"
DIFF = "document/history/diff/"
RESTORE = "document/history/restore/"


def _two_versions(thread):
    document_services.document_save(
        thread=thread,
        title="Plan",
        content="Intro.\nThe <b>first</b> draft.\n",
        base_version=0,
        author="person",
        person=thread.owner,
    )
    document_services.document_save(
        thread=thread, title="Plan", content="Intro.\nThe second draft.\n", base_version=1, author="agent"
    )


def test_history_lists_the_versions_newest_first_and_shows_the_last_change(owner_client, thread):
    _two_versions(thread)
    response = owner_client.get(ws_url(thread, HISTORY), **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.index("Version 2") < html.index("Version 1")
    # The person by name (the owner has no full name: the username), the same for every viewer.
    assert "Agent" in html and ">owner<" in html
    # Only older versions can be restored or compared with now; the current one says so.
    assert ">Restore version 1<" in html and ">Restore version 2<" not in html
    assert '<span class="badge">Current</span>' in html
    # What the last edit changed, escaped: the person's markup is text.
    assert "Changes from version 1 to now (version 2)" in html
    assert "<del>&lt;b&gt;first&lt;/b&gt;</del>" in html and "<ins>second</ins>" in html
    assert "<b>first</b>" not in html
    # The editor is not in it: opening the history leaves the editor's text alone.
    assert "<textarea" not in html and 'name="content"' not in html


def test_diff_between_two_chosen_versions_and_identical_versions(owner_client, thread):
    _two_versions(thread)
    html = owner_client.get(ws_url(thread, DIFF), {"old": 2, "new": 1}, **HTMX).content.decode()
    assert "Changes from version 2 to version 1" in html
    assert "<del>second</del>" in html and "<ins>&lt;b&gt;first&lt;/b&gt;</ins>" in html
    same = owner_client.get(ws_url(thread, DIFF), {"old": 1, "new": 1}, **HTMX).content.decode()
    assert "The two versions are the same." in same and "<ins>" not in same


def test_diff_of_a_version_not_kept_or_not_a_number_says_so(owner_client, thread):
    _two_versions(thread)
    missing = owner_client.get(ws_url(thread, DIFF), {"old": 9}, **HTMX)
    assert missing.status_code == 200 and "Version 9 of the document is not kept" in missing.content.decode()
    assert owner_client.get(ws_url(thread, DIFF), {"old": 9}).status_code == 404
    bad = owner_client.get(ws_url(thread, DIFF), {"old": "<x>"}, **HTMX)
    assert bad.status_code == 200 and "must be numbers" in bad.content.decode()
    assert owner_client.get(ws_url(thread, DIFF), {"old": "<x>"}).status_code == 400


def test_a_version_whose_stored_text_is_damaged_is_not_shown_and_the_owner_is_told(owner_client, thread, caplog):
    _two_versions(thread)
    first = DocumentRevision.objects.get(document__thread=thread, version=1)
    ContentBlob.objects.filter(pk=first.body_id).update(text="Not what was written.")
    response = owner_client.get(ws_url(thread, DIFF), {"old": 1, "new": 2}, **HTMX)
    # The page stays as it is and its flash line says why (static/js/workspace.js).
    told = json.loads(response["HX-Trigger"])["haico:flash"]["message"]
    assert response.status_code == 200 and response["HX-Reswap"] == "none"
    assert "This version could not be read: its stored text is damaged" in told and "Nothing was changed" in told
    assert "Not what was written." not in response.content.decode()
    plain = owner_client.get(ws_url(thread, DIFF), {"old": 1, "new": 2})
    assert plain.status_code == 500 and "its stored text is damaged" in plain.content.decode()
    assert "Traceback" not in plain.content.decode()
    assert any(r.levelname == "ERROR" and "could not be read back" in r.getMessage() for r in caplog.records)
    # The document itself is untouched and still opens.
    assert _doc(thread).version == 2
    assert owner_client.get(ws_url(thread, DIFF), {"old": 2, "new": 2}, **HTMX).status_code == 200


def test_a_version_older_than_the_listed_hundred_is_compared_and_restored_by_its_number(owner_client, thread):
    for n in range(1, 106):
        document_services.document_save(thread=thread, title="Notes", content=f"Draft {n}.\n", base_version=n - 1)
    history = owner_client.get(ws_url(thread, HISTORY), **HTMX).content.decode()
    assert "The newest 100 of 105 versions" in history and ">Restore version 5<" not in history

    diff = owner_client.get(ws_url(thread, DIFF), {"old": 2}, **HTMX).content.decode()
    assert "Changes from version 2 to now (version 105)" in diff
    assert 'data-doc-restore="2"' in diff and ">Restore version 2</button>" in diff
    listed = owner_client.get(ws_url(thread, DIFF), {"old": 50}, **HTMX).content.decode()
    assert "data-doc-restore" not in listed  # listed: restored from its own entry
    between = owner_client.get(ws_url(thread, DIFF), {"old": 2, "new": 3}, **HTMX).content.decode()
    assert "data-doc-restore" not in between

    response = owner_client.post(ws_url(thread, RESTORE), {"version": 2, "base_version": 105}, **HTMX)
    assert "Version 2 restored as version 106." in response.content.decode()
    assert _doc(thread).content == "Draft 2.\n"


def test_restore_writes_a_new_version_by_the_person_and_sends_it_to_the_editor(owner_client, thread):
    _two_versions(thread)
    response = owner_client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 2}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    doc = _doc(thread)
    assert (doc.content, doc.version) == ("Intro.\nThe <b>first</b> draft.\n", 3)
    assert DocumentRevision.objects.get(document=doc, version=3).author == "person"
    assert "Version 1 restored as version 3." in html
    # The refreshed history, and the new text as the live patch the editor takes in.
    assert html.index("Version 3") < html.index("Version 2")
    # The patch says it is a restore, and whose, for the other open pages (docs/adr/0164).
    owner = thread.owner
    assert (
        f'<template data-live-patch="document" data-version="3" data-restored-from="1" data-restored-by="owner" '
        f'data-restored-by-id="{owner.pk}">'
    ) in html
    assert "The &lt;b&gt;first&lt;/b&gt; draft." in html
    assert "owner, restored version 1</span>" in html  # the history's entry for version 3
    assert DocumentRevision.objects.get(document=doc, version=3).restored_from == 1
    assert "It undid what" not in html  # nobody else's saves were undone


def test_a_restore_tells_the_person_whose_saves_it_undid_and_not_those_it_kept(owner_client, owner, thread, django_user_model):
    from conversations import sharing

    django_user_model.objects.create_user(username="bea", password="pw-123456", first_name="Bea", last_name="Lund")
    django_user_model.objects.create_user(username="cy", password="pw-123456")
    bea = sharing.thread_member_add(thread=thread, who="bea", role="editor", by=owner).user
    cy = sharing.thread_member_add(thread=thread, who="cy", role="editor", by=owner).user
    save = document_services.document_save
    text = "Kept.\n"
    save(thread=thread, title="Notes", content=text, base_version=0, author="person", person=owner)  # v1
    for version, (who, line) in enumerate(
        [(bea, "Bea's first."), (owner, "Owner's own."), (bea, "Bea's second."), (None, "The agent's.")], start=2
    ):
        text += line + "\n"
        author = "agent" if who is None else "person"
        save(thread=thread, content=text, base_version=version - 1, author=author, person=who)  # v2..v5
    # Cy writes after the page showed version 5: merged into the restore, not undone.
    save(thread=thread, content="Cy's opening.\n" + text, base_version=5, author="person", person=cy)  # v6

    response = owner_client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 5}, **HTMX)
    html = response.content.decode()

    assert (_doc(thread).content, _doc(thread).version) == ("Cy's opening.\nKept.\n", 7)
    assert (
        "Version 1 restored as version 7, merged with the changes saved meanwhile. It undid what Bea Lund (2 saves, "
        "versions 2 to 4) saved after version 1; the history keeps every version."
    ) in html
    assert "cy (" not in html


def test_the_saves_a_restore_undid_are_counted_by_the_database_however_many(owner, thread, django_user_model):
    from conversations import sharing

    django_user_model.objects.create_user(username="bea", password="pw-123456")
    bea = sharing.thread_member_add(thread=thread, who="bea", role="editor", by=owner).user
    document_services.document_save(thread=thread, title="Notes", content="Start.\n", author="person", person=owner)
    for n in range(2, 302):
        document_services.document_save(
            thread=thread, content=f"Start.\nAutosave {n}.\n", base_version=n - 1, author="mcp", person=bea
        )
    undone = selectors.document_saves_a_restore_undid(thread=thread, restored=1, through=301, restorer=owner)
    assert undone == [selectors.SavesUndone("bea", 2, 301, 300)]
    assert selectors.document_saves_a_restore_undid(thread=thread, restored=1, through=301, restorer=bea) == []


def test_restore_merges_with_an_edit_made_since_the_page_showed_the_history(owner_client, thread):
    _two_versions(thread)
    document_services.document_save(
        thread=thread, content="Intro, by the agent.\nThe second draft.\n", base_version=2, author="agent"
    )  # v3, unseen by the person
    response = owner_client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 2}, **HTMX)
    assert "merged with the changes saved meanwhile" in response.content.decode()
    assert (_doc(thread).content, _doc(thread).version) == ("Intro, by the agent.\nThe <b>first</b> draft.\n", 4)


def test_restore_that_overlaps_an_edit_made_since_writes_nothing_and_says_why(owner_client, thread):
    _two_versions(thread)
    document_services.document_save(thread=thread, content="Intro.\nThe agent's draft.\n", base_version=2, author="agent")
    response = owner_client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 2}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and 'role="alert"' in html
    assert "it is now version 3" in html and "Nothing was restored" in html
    assert _doc(thread).version == 3
    assert owner_client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 2}).status_code == 409


def test_restore_refuses_a_missing_or_unknown_version(owner_client, thread):
    _two_versions(thread)
    for fields, shown in (
        ({"base_version": 2}, "Say which version to restore."),
        ({"version": 8, "base_version": 2}, "Version 8 of the document is not kept"),
    ):
        response = owner_client.post(ws_url(thread, RESTORE), fields, **HTMX)
        assert response.status_code == 200 and shown in response.content.decode()
        assert owner_client.post(ws_url(thread, RESTORE), fields).status_code == 400
    assert _doc(thread).version == 2


def test_restore_without_htmx_goes_back_to_the_page(owner_client, thread):
    _two_versions(thread)
    response = owner_client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 2})
    assert response.status_code == 302 and response["Location"] == f"/threads/{thread.pk}/workspace/"
    assert _doc(thread).version == 3


@pytest.mark.parametrize("suffix", [HISTORY, DIFF])
def test_history_and_diff_are_the_owners_only(client, other_client, thread, suffix):
    _two_versions(thread)
    refused = other_client.get(ws_url(thread, suffix))
    assert refused.status_code == 404 and "draft" not in refused.content.decode()
    assert answered_as_missing(other_client.get(ws_url(thread, suffix), **HTMX))
    client.logout()
    assert client.get(ws_url(thread, suffix)).status_code == 302


def test_restore_is_the_owners_only(client, other_client, thread):
    _two_versions(thread)
    assert other_client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 2}).status_code == 404
    client.logout()
    response = client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 2})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert _doc(thread).version == 2


def test_history_of_a_document_never_saved_says_so(owner_client, thread):
    html = owner_client.get(ws_url(thread, HISTORY), **HTMX).content.decode()
    assert "No versions yet: the document has not been saved." in html
    assert "Restore" not in html and "Changes from" not in html


# --- the review of an agent turn's changes: Keep / Undo (docs/adr/0019) --------------------

REVIEWED_BEFORE = "# Notes\n\nFirst paragraph.\n\nSecond paragraph."
REVIEWED_AFTER = "# Notes\n\nFirst paragraph, by the agent.\n\nSecond paragraph, by the agent."


def _agent_turn(thread):
    from workspace.models import Thread

    document_services.document_save(thread=thread, content=REVIEWED_BEFORE, author=DocumentRevision.Author.PERSON)
    Thread.objects.filter(pk=thread.pk).update(turn_index=1)
    document_services.document_save(thread=thread, content=REVIEWED_AFTER, author=DocumentRevision.Author.AGENT)


def test_the_centre_panel_shows_the_agent_turns_changes_with_keep_and_undo(owner_client, thread):
    _agent_turn(thread)
    html = owner_client.get(ws_url(thread, "centre/")).content.decode()
    assert "The agent’s changes in turn 1" in html
    assert html.count(">Keep</button>") == 2 and html.count(">Undo</button>") == 2
    assert ">Keep all</button>" in html and ">Undo all</button>" in html


def test_undo_answers_with_the_review_and_the_documents_new_text(owner_client, thread):
    _agent_turn(thread)
    response = owner_client.post(ws_url(thread, "document/review/undo/"), {"turn": 1, "hunk": 0}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Change undone." in html and 'id="doc-review"' in html and 'hx-swap-oob="true"' in html
    assert 'data-live-patch="document"' in html
    assert _doc(thread).content == REVIEWED_AFTER.replace("First paragraph, by the agent.", "First paragraph.")


def test_a_refused_undo_answers_200_with_the_reason_and_changes_nothing(owner_client, thread):
    _agent_turn(thread)
    edited = REVIEWED_AFTER.replace("Second paragraph, by the agent.", "Second paragraph, by me.")
    document_services.document_save(thread=thread, content=edited, base_version=2, author=DocumentRevision.Author.PERSON)
    response = owner_client.post(ws_url(thread, "document/review/undo/"), {"turn": 1, "hunk": 1}, **HTMX)
    assert response.status_code == 200
    assert "edited after the agent made it" in response.content.decode() and 'role="alert"' in response.content.decode()
    assert _doc(thread).content == edited
    plain = owner_client.post(ws_url(thread, "document/review/undo/"), {"turn": 1, "hunk": 1})
    assert plain.status_code == 409


@pytest.mark.parametrize("data", [{}, {"turn": "x"}, {"turn": 1, "hunk": "-1"}, {"turn": 1, "hunk": "9"}, {"turn": 5}])
def test_review_answers_refuse_bad_input_without_an_error_page(owner_client, thread, data):
    _agent_turn(thread)
    response = owner_client.post(ws_url(thread, "document/review/keep/"), data, **HTMX)
    assert response.status_code == 200 and 'role="alert"' in response.content.decode()
    assert _doc(thread).content == REVIEWED_AFTER


def _chapter(changed_every: int, *, by_the_agent: bool) -> str:
    """About 150 000 characters of numbered paragraphs; with `by_the_agent`,
    every `changed_every`-th one reworded."""
    paragraphs = []
    for n in range(1, 1_800):
        word = "term" if by_the_agent and n % changed_every == 0 else "word"
        paragraphs.append(f"Paragraph {n}: the {word} {n} and the reasoning that goes with it, at some length.")
    return "\n\n".join(paragraphs)


def _agent_rewrites_the_chapter(thread, changed_every):
    from workspace.models import Thread

    before, after = _chapter(changed_every, by_the_agent=False), _chapter(changed_every, by_the_agent=True)
    document_services.document_save(thread=thread, content=before, author=DocumentRevision.Author.PERSON)
    Thread.objects.filter(pk=thread.pk).update(turn_index=1)
    document_services.document_save(thread=thread, content=after, author=DocumentRevision.Author.AGENT)
    return before, after


def test_a_rewrite_of_every_paragraph_of_a_long_chapter_shows_its_first_lines_and_says_how_many_more(owner_client, thread):
    from workspace.panels import render_document_patch

    before, after = _agent_rewrites_the_chapter(thread, changed_every=1)
    assert len(after) > 145_000
    html = owner_client.get(ws_url(thread, "centre/")).content.decode()
    assert "1 of 1 change to review" in html
    assert "Paragraph 1: the <del>word</del><ins>term</ins> 1 and" in html
    # The blank lines between the paragraphs did not change.
    assert 'Changed line: </span><span class="doc-diff-text"><span class="muted">(empty line)' not in html
    assert "more lines of this change, in the document below" in html
    assert "Paragraph 1799: the <del>" not in html
    # The panel is the chapter (in the editor) and a review of bounded size, not the whole
    # comparison again; so is every push of the document to the open tabs.
    assert len(html) < len(after) + 120_000
    assert len(render_document_patch(thread=thread)) < 2 * len(after) + 120_000
    # What is not shown is still answered: Undo puts the whole chapter back.
    undone = owner_client.post(ws_url(thread, "document/review/undo/"), {"turn": 1, "hunk": 0}, **HTMX)
    assert undone.status_code == 200 and _doc(thread).content == before


def test_a_review_of_many_changes_shows_the_first_ones_and_the_next_as_these_are_answered(owner_client, thread):
    _, after = _agent_rewrites_the_chapter(thread, changed_every=20)
    html = owner_client.get(ws_url(thread, "centre/")).content.decode()
    assert "89 of 89 changes to review" in html
    assert html.count(">Keep</button>") == 30
    assert "59 more changes after these show as these are kept or undone" in html
    assert 'id="doc-review-hunk-30"' not in html

    kept = owner_client.post(ws_url(thread, "document/review/keep/"), {"turn": 1, "hunk": 0}, **HTMX)
    html = kept.content.decode()
    assert "88 of 89 changes to review, 1 kept" in html
    assert 'id="doc-review-hunk-30"' in html and "58 more changes after these" in html
    # Keep all answers the ones not shown too.
    owner_client.post(ws_url(thread, "document/review/keep/"), {"turn": 1}, **HTMX)
    assert selectors.document_review(thread=thread).hunks == []
    assert _doc(thread).content == after


def test_comparing_far_apart_versions_of_a_long_document_shows_the_first_changes_and_says_how_many_more(owner_client, thread):
    before, after = _chapter(20, by_the_agent=False), _chapter(20, by_the_agent=True)
    document_services.document_save(thread=thread, title="Chapter", content=before)
    document_services.document_save(thread=thread, content=after, base_version=1)
    response = owner_client.get(ws_url(thread, DIFF), {"old": 1}, **HTMX)
    html = response.content.decode()
    assert "Changes from version 1 to now (version 2)" in html
    assert "The first 30 of 89 changes: 0 lines added, 0 removed, 89 changed." in html
    assert "Paragraph 20: the <del>word</del><ins>term</ins> 20 and" in html
    assert "Paragraph 600: the <del>word</del>" in html and "Paragraph 620: the <del>" not in html
    assert "59 more changes after these (59 lines), not shown: compare versions closer together to see them." in html
    assert len(html) < 80_000


def test_restoring_the_first_version_of_a_rewritten_long_document_answers_with_its_text_and_a_bounded_comparison(
    owner_client, thread
):
    from workspace.panels import render_document_patch

    before, after = _chapter(1, by_the_agent=False), _chapter(1, by_the_agent=True)
    document_services.document_save(thread=thread, title="Chapter", content=before)
    document_services.document_save(thread=thread, content=after, base_version=1)
    response = owner_client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 2}, **HTMX)
    html = response.content.decode()
    assert "Version 1 restored as version 3." in html
    assert _doc(thread).content.encode() == before.encode()
    # The history shows what the restore changed, its first lines only (every
    # paragraph changed back): the answer is the editor's new text and little more.
    assert "Changes from version 2 to now (version 3)" in html
    assert "Paragraph 1: the <del>term</del><ins>word</ins> 1 and" in html
    assert "more lines of this change, not shown" in html and "Paragraph 1799: the <del>" not in html
    assert len(html) < len(render_document_patch(thread=thread)) + 60_000


def _patch_text(html: str) -> tuple[dict[str, str], str]:
    """The restore answer's document patch: its template's attributes and its textarea's text (as the page reads it)."""
    import re
    from html import unescape

    template = re.search(r'<template data-live-patch="document"([^>]*)>', html)
    attributes = dict(re.findall(r'([\w-]+)="([^"]*)"', template.group(1)))
    text = re.search(r'<textarea name="content">\n(.*?)</textarea>', html, re.DOTALL).group(1)
    return attributes, unescape(text)


def _as_the_page_rebuilds_it(base: str, attributes: dict[str, str], middle: str) -> str:
    """static/js/document_editor.js wholeText: offsets in UTF-16 units, as the page counts."""
    import zlib

    units = base.encode("utf-16-le")
    head, tail = int(attributes["data-kept-head"]) * 2, int(attributes["data-kept-tail"]) * 2
    text = units[:head].decode("utf-16-le") + middle + units[len(units) - tail :].decode("utf-16-le")
    assert zlib.crc32(text.encode("utf-8")) == int(attributes["data-crc32"])
    return text


def test_restoring_a_version_close_to_the_one_shown_answers_with_the_part_of_the_text_that_differs(owner_client, thread):
    """The answer carried the whole 199 000-character text again for one
    paragraph that differs from what the page holds: now only that span,
    which the page puts between the parts it keeps of its own text."""
    before = "🇫🇷 👩‍👩‍👧 " + _chapter(1, by_the_agent=False)[:198_000]
    after = before.replace("Paragraph 900: the word 900", "Paragraph 900: the term 900, reworded")
    document_services.document_save(thread=thread, title="Chapter", content=before)
    document_services.document_save(thread=thread, content=after, base_version=1)

    response = owner_client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 2}, **HTMX)

    html = response.content.decode()
    assert "Version 1 restored as version 3." in html and _doc(thread).content == before
    attributes, middle = _patch_text(html)
    assert attributes["data-version"] == "3" and attributes["data-since-version"] == "2"
    assert len(middle) < 40
    assert _as_the_page_rebuilds_it(after, attributes, middle) == before
    # The text is no longer in the answer twice over (its preview still is, which the page shows).
    assert len(html.encode()) < len(before) + 30_000


def test_restoring_a_version_far_from_the_one_shown_answers_with_the_whole_text(owner_client, thread):
    before, after = _chapter(1, by_the_agent=False), _chapter(1, by_the_agent=True)
    document_services.document_save(thread=thread, title="Chapter", content=before)
    document_services.document_save(thread=thread, content=after, base_version=1)

    html = owner_client.post(ws_url(thread, RESTORE), {"version": 1, "base_version": 2}, **HTMX).content.decode()

    attributes, text = _patch_text(html)
    assert "data-since-version" not in attributes and text == before

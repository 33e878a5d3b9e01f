"""The live document: autosave, merges of saves based on an older version,
the conflict view and its choices, the size cap. Method, access, database
effect and what the person sees."""


import pytest
from django.conf import settings

from tests.support.web import HTMX, answered_as_missing, ws_url
from workspace import selectors
from workspace.models import Document, DocumentRevision
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
    assert '<div id="doc-save-state" class="doc-save-state" data-state="saved">' in html
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
    response = _save(owner_client, thread, title="Report", content=REPORT.replace("Intro paragraph.", "Intro by me."), base_version=1)
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
    assert '<div id="doc-conflict" class="doc-conflict" role="region" aria-label="Document conflict" hidden hx-swap-oob="true">' in html


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
    document_services.document_save(thread=thread, title="T", content="x")
    response = _save(owner_client, thread, htmx=False, title="T", content="y", base_version=0)
    assert response.status_code == 409
    assert _doc(thread).content == "x"


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


@pytest.mark.parametrize(("title", "message"), [("   ", "Document title cannot be empty."), ("t" * 201, "Document title is too long")])
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
    assert owner_client.post(ws_url(thread, "document/preview/")).status_code == 405


def test_a_short_documents_preview_is_on_the_page(owner_client, thread):
    document_services.document_save(thread=thread, title="Short", content="# Short")
    assert "<h1>Short</h1>" in owner_client.get(ws_url(thread, "centre/")).content.decode()

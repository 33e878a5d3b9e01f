"""The save view with the editor page's save numbers (docs/adr/0139): a
save whose answer was lost and was written is merged against as what it
carried; a malformed or partial numbering is refused with nothing saved."""

import pytest

from tests.support.web import HTMX, ws_url
from workspace.models import Document, DocumentPageSave
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db

REPORT = "# Soil carbon\n\nIntro paragraph.\n\nMethods paragraph.\n"
FIRST_TRY = REPORT + "\nOwner's paragraph, first try.\n"
PAGE = "0123456789abcdef0123456789abcdef"


def _save(client, thread, *, htmx=True, **fields):
    return client.post(ws_url(thread, "document/save/"), fields, **(HTMX if htmx else {}))


def _numbered(number, unanswered_from, page=PAGE):
    return {"save_page": page, "save_number": number, "save_unanswered_from": unanswered_from}


LEFT_PAGE = "fedcba9876543210fedcba9876543210"


def _left(page, number, unanswered_from):
    return {"save_left_page": page, "save_left_number": number, "save_left_unanswered_from": unanswered_from}


def _stored(thread):
    document = Document.objects.get(thread=thread)
    return document.content, document.version


def test_the_owners_next_save_after_a_lost_answer_undoes_nothing_and_says_saved(owner_client, thread):
    document_services.document_save(thread=thread, title="Report", content=REPORT)  # version 1
    _save(owner_client, thread, title="Report", content=FIRST_TRY, base_version=1, **_numbered(1, 1))  # answer lost
    html = _save(owner_client, thread, title="Report", content=REPORT, base_version=1, **_numbered(2, 1)).content.decode()
    assert 'data-state="saved"' in html and 'data-version="3"' in html
    assert _stored(thread) == (REPORT, 3)


def test_a_save_older_than_one_written_is_refused_and_writes_nothing(owner_client, thread):
    document_services.document_save(thread=thread, title="Report", content=REPORT)
    _save(owner_client, thread, title="Report", content=REPORT + "\nLater.\n", base_version=1, **_numbered(2, 1))
    response = _save(owner_client, thread, htmx=False, title="Report", content=FIRST_TRY, base_version=1, **_numbered(1, 1))
    assert response.status_code == 400
    assert "A later save from this page was written already" in response.content.decode()
    assert _stored(thread) == (REPORT + "\nLater.\n", 2)


@pytest.mark.parametrize(
    "fields",
    [
        _numbered(2, 1, page="short"),
        _numbered(2, 1, page="not hex but spaces here!!"),
        _numbered(2, 1, page="x" * 65),
        _numbered(0, 0),
        _numbered(1, 2),
        _numbered("²", 1),
        _numbered(2**31, 1),
        {"save_page": PAGE, "save_number": 1},
        {"save_number": 1, "save_unanswered_from": 1},
        {**_numbered(2, 1), **_left("short", 4, 4)},
        {**_numbered(2, 1), **_left(LEFT_PAGE, 3, 4)},
        {**_numbered(2, 1), **_left(LEFT_PAGE, 2**31, 4)},
        {**_numbered(2, 1), **_left(PAGE, 4, 4)},
        {**_numbered(2, 1), "save_left_page": LEFT_PAGE, "save_left_number": 4},
        _left(LEFT_PAGE, 4, 4),
    ],
    ids=[
        *["short", "spaces", "too-long", "zero", "unanswered-after", "unicode-digit", "huge", "no-first", "no-page"],
        *["left-short", "left-unanswered-after", "left-huge", "left-is-itself", "left-no-first", "left-alone"],
    ],
)
def test_a_bad_save_numbering_is_refused_and_nothing_saved(owner_client, thread, fields):
    document_services.document_save(thread=thread, title="Report", content=REPORT)
    response = _save(owner_client, thread, htmx=False, title="Report", content=FIRST_TRY, base_version=1, **fields)
    assert response.status_code == 400
    assert "That save could not be read; reload the page and try again." in response.content.decode()
    assert _stored(thread) == (REPORT, 1)
    assert not DocumentPageSave.objects.exists()


def test_a_json_save_with_a_nested_page_id_is_refused(owner_client, thread):
    document_services.document_save(thread=thread, title="Report", content=REPORT)
    body = {"title": "Report", "content": FIRST_TRY, "base_version": 1, "save_page": [[["x"]]], "save_number": 1}
    response = owner_client.post(ws_url(thread, "document/save/"), body, content_type="application/json")
    assert response.status_code == 400
    assert _stored(thread) == (REPORT, 1)


def test_the_same_save_delivered_twice_is_answered_saved_the_second_time(owner_client, thread):
    document_services.document_save(thread=thread, title="Report", content=REPORT)  # version 1
    first = _save(owner_client, thread, title="Report", content=FIRST_TRY, base_version=1, **_numbered(1, 1))
    again = _save(owner_client, thread, title="Report", content=FIRST_TRY, base_version=1, **_numbered(1, 1))
    assert again.status_code == 200
    html = again.content.decode()
    assert 'data-state="saved"' in html and 'data-version="2"' in html, html
    assert "Not saved" not in html
    assert first.status_code == 200
    assert _stored(thread) == (FIRST_TRY, 2)


def test_two_tabs_going_on_from_one_left_page_keep_both_paragraphs(owner_client, thread):
    """Two tabs that took the same left page over (a tab duplicated with
    what the page left in the tab's storage) send their own page ids and
    name the left page apart: neither is refused, neither undoes the other."""
    document_services.document_save(thread=thread, title="Report", content=REPORT)  # version 1
    left = _left(LEFT_PAGE, 4, 4)
    one = REPORT + "\nTab one's paragraph.\n"
    two = REPORT + "\nTab two's paragraph.\n"
    tab_one, tab_two = "1" * 32, "2" * 32
    answers = [
        _save(owner_client, thread, title="Report", content=one, base_version=1, **_numbered(1, 1, tab_one), **left),
        _save(owner_client, thread, title="Report", content=two, base_version=1, **_numbered(1, 1, tab_two), **left),
        _save(owner_client, thread, title="Report", content=two + "More.\n", base_version=1, **_numbered(2, 1, tab_two), **left),
    ]
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    content = _stored(thread)[0]
    assert "Tab one's paragraph." in content and "Tab two's paragraph.\nMore." in content


def test_a_late_save_of_the_page_left_by_a_reload_never_brings_back_what_she_deleted(owner_client, thread):
    """The page before a reload sent save 4 (her paragraph), unanswered; the
    new page saved her deletion first, naming the left page; save 4 arrives
    after it: refused, nothing written."""
    document_services.document_save(thread=thread, title="Report", content=REPORT)  # version 1
    new_page = _save(
        owner_client, thread, title="Report", content=REPORT, base_version=1, **_numbered(1, 1), **_left(LEFT_PAGE, 4, 4)
    )
    assert 'data-state="saved"' in new_page.content.decode()
    late = _save(
        owner_client, thread, htmx=False, title="Report", content=FIRST_TRY, base_version=1, **_numbered(4, 4, LEFT_PAGE)
    )
    assert _stored(thread) == (REPORT, 2)
    assert late.status_code == 400
    assert "A later save from this page was written already" in late.content.decode()

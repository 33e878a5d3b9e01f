"""htmx attributes are inherited by everything inside the element that
carries them. A form's hx-target / hx-swap / hx-sync are meant for the
form's own request: an element inside it that makes a request of its own
(the delayed preview of a long document, a History button) must not swap
its answer into the form's target or wait in its queue. The editor's form
once did exactly that: above 8 000 characters the preview's answer replaced
the save state, base version included, and no save went through again.

Each form that sets one of those attributes either stops them at its edge
(hx-disinherit) or has no request-making element inside it; checked in
every template's source and in the rendered workspace page, where partials
are put together."""

from pathlib import Path

import lxml.html  # python-docx's dependency (requirements.txt)
import pytest
from django.conf import settings
from django.urls import reverse

from workspace.services import document as document_services

REQUEST_ATTRIBUTES = ("hx-get", "hx-post", "hx-put", "hx-patch", "hx-delete")
FORM_ONLY_ATTRIBUTES = ("hx-target", "hx-swap", "hx-sync", "hx-select", "hx-include", "hx-params")


def leaks(html: str) -> list[str]:
    """Each request-making element inside a form that would use one of the
    form's own attributes (not set on the element, not stopped by the
    form's hx-disinherit)."""
    root = lxml.html.fromstring(f"<div>{html}</div>")
    found = []
    for form in root.iter("form"):
        own = [name for name in FORM_ONLY_ATTRIBUTES if form.get(name) is not None]
        stopped = (form.get("hx-disinherit") or "").split()
        for element in form.iterdescendants():
            if not isinstance(element.tag, str) or not any(element.get(name) is not None for name in REQUEST_ATTRIBUTES):
                continue
            inherited = [name for name in own if element.get(name) is None and "*" not in stopped and name not in stopped]
            if inherited:
                where = form.get("id") or form.get("class")
                found.append(
                    f"<{element.tag} {element.get('id') or element.get('class')}> inherits {inherited} from form {where}"
                )
    return found


def test_leaks_finds_a_request_inside_a_form_that_would_use_the_forms_target():
    form = '<form hx-post="/save/" hx-target="#state" hx-sync="this:queue last">{}</form>'
    nested = '<div id="preview" hx-get="/preview/" hx-trigger="load" hx-swap="innerHTML"></div>'
    assert leaks(form.format(nested)) == ["<div preview> inherits ['hx-target', 'hx-sync'] from form None"]
    assert leaks(form.replace("<form ", '<form hx-disinherit="*" ').format(nested)) == []
    assert leaks(form.format(nested.replace("<div ", '<div hx-target="this" hx-sync="this:drop" '))) == []


@pytest.mark.parametrize("path", sorted(Path(settings.BASE_DIR, "templates").rglob("*.html")), ids=str)
def test_no_template_lets_a_form_target_leak_into_a_request_inside_it(path):
    assert leaks(path.read_text()) == []


@pytest.mark.django_db
def test_the_workspace_page_of_a_long_document_lets_nothing_inherit_the_editor_forms_target(owner_client, thread):
    document_services.document_save(thread=thread, title="Long", content="A paragraph of a long report.\n\n" * 700)
    response = owner_client.get(reverse("thread-page", kwargs={"thread_id": thread.pk}))
    html = response.content.decode()
    assert response.status_code == 200
    # Over 8 000 characters the preview comes by its own request after the page.
    root = lxml.html.fromstring(html)
    [preview] = root.xpath("//form[@id='doc-form']//*[@id='doc-preview'][@hx-get]")
    assert preview.get("hx-target") == "this"
    assert leaks(html) == []

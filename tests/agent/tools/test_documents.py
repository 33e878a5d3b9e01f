"""agent.tools.documents: update_document and append_to_document, envelope and database effect."""

import pytest

from tests.agent.tools.helpers import call, db
from workspace import selectors
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db(transaction=True)


async def test_update_document_replaces_content_and_title(thread):
    result = await call(thread, "update_document", content="# Review\n\nBody.", title="Lit review draft")
    assert result["success"] is True
    assert "Lit review draft" in result["summary"]
    document = await db(selectors.document_for, thread=thread)
    assert (document.title, document.content) == ("Lit review draft", "# Review\n\nBody.")
    assert "artifact" not in result


async def test_update_document_without_content_fails_and_writes_nothing(thread):
    result = await call(thread, "update_document", title="Only a title")
    assert result["success"] is False
    assert "content" in result["error"] and "Field required" in result["error"]
    document = await db(selectors.document_for, thread=thread)
    assert document.pk is None


async def test_append_to_document_adds_to_the_end(thread):
    await db(document_services.document_save, thread=thread, content="First line")
    result = await call(thread, "append_to_document", text="Second line")
    assert result["success"] is True
    document = await db(selectors.document_for, thread=thread)
    assert document.content == "First line\nSecond line"


async def test_append_blank_text_fails_with_service_message(thread):
    result = await call(thread, "append_to_document", text="   ")
    assert result == {"success": False, "error": "Text to append cannot be empty."}

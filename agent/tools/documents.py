"""The shared document (centre panel)."""

from workspace.services import document as document_services

from .decorator import workspace_tool
from .schemas import AppendToDocumentArgs, UpdateDocumentArgs


@workspace_tool(
    name="update_document",
    description="Replace the whole shared document (and optionally its title). "
    "Use for restructuring or large rewrites; pass the complete new text.",
    args_schema=UpdateDocumentArgs,
)
def update_document(thread, *, content: str, title: str | None = None) -> str:
    document = document_services.document_save(thread=thread, title=title, content=content)
    return f"Replaced the document '{document.title}' ({len(document.content):,} characters, version {document.version})."


@workspace_tool(
    name="append_to_document",
    description="Add text to the end of the shared document. Use for incremental additions.",
    args_schema=AppendToDocumentArgs,
)
def append_to_document(thread, *, text: str) -> str:
    document = document_services.document_append(thread=thread, text=text)
    return f"Appended {len(text):,} characters to '{document.title}' (now {len(document.content):,} characters)."

"""Errors raised by services. Each carries a message fit to show a person
(panel error, 4xx body, chat notice) or to hand back to the model (tool
failure envelope).

`UserFacingError` is the base every layer's refusals share, so an interface
(a view, the consumer, a tool) can show any of them the same way; this
module sits at the bottom of the app graph so every layer can raise one."""


class UserFacingError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self):
        return self.message


class WorkspaceError(UserFacingError):
    """A workspace write was refused; nothing was changed."""


class InvalidInput(WorkspaceError):
    """The request is malformed or out of range; nothing was changed."""


class NotFound(WorkspaceError):
    """The referenced item does not exist in this thread."""


class PreferenceLocked(WorkspaceError):
    """The agent tried to change a preference the person locked."""


class DocumentConflict(WorkspaceError):
    """A save was based on a document version that is no longer current."""

    def __init__(self, message: str, *, current_version: int):
        super().__init__(message)
        self.current_version = current_version

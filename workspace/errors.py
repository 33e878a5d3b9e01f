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


# What a viewer is told when they try to change a thread shared with them:
# they can see it, so saying it is not there would only puzzle them.
VIEW_ONLY_MESSAGE = "You can view this thread but not change it; ask its owner to make you an editor."


class WorkspaceError(UserFacingError):
    """A workspace write was refused; nothing was changed."""


class InvalidInput(WorkspaceError):
    """The request is malformed or out of range; nothing was changed."""


class NotFound(WorkspaceError):
    """The referenced item does not exist in this thread."""


class PreferenceLocked(WorkspaceError):
    """The agent tried to change a preference the person locked."""


class ChangedMeanwhile(WorkspaceError):
    """A person's form was filled from a row someone else changed since, and
    would replace their change; nothing was written (docs/adr/0125).
    `base`: the form's hidden fields as the row holds them now (field name →
    value), which the form takes on with what was typed, so saving again
    replaces the change deliberately; empty when the page is shown afresh
    instead (a step moved meanwhile)."""

    def __init__(self, message: str, *, base: dict[str, str] | None = None):
        super().__init__(message)
        self.base = dict(base or {})


class StepMoved(ChangedMeanwhile):
    """Indent, outdent or a move of a step the person's page showed at
    another place in the plan; nothing moved (docs/adr/0125)."""


class ObjectiveChanged(ChangedMeanwhile):
    """The agent's (or a person's) objective would replace one someone else
    wrote after they were shown the objective; nothing was written
    (docs/adr/0114, docs/adr/0125)."""


class DocumentConflict(WorkspaceError):
    """A save based on an older version overlaps what changed since; nothing
    was written. Carries both sides so an interface can show them: the
    current version and its text, what was submitted, and the overlapping
    parts (`workspace.merge.Conflict`s, placed in both texts); `title_conflict`
    is (submitted, current) when both changed the title differently."""

    def __init__(
        self,
        message: str,
        *,
        current_version: int,
        base_version: int | None = None,
        current_title: str = "",
        current_content: str = "",
        submitted_title: str = "",
        submitted_content: str = "",
        conflicts=(),
        title_conflict: tuple[str, str] | None = None,
    ):
        super().__init__(message)
        self.current_version = current_version
        self.base_version = base_version
        self.current_title = current_title
        self.current_content = current_content
        self.submitted_title = submitted_title
        self.submitted_content = submitted_content
        self.conflicts = list(conflicts)
        self.title_conflict = title_conflict

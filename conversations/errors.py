from workspace.errors import WorkspaceError


class TurnAlreadyRunning(WorkspaceError):
    """A second message arrived while the agent is still working on this thread."""

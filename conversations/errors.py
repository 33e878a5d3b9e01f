from workspace.errors import UserFacingError


class ConversationError(UserFacingError):
    """A chat or thread action was refused; nothing was stored."""


class TurnAlreadyRunning(ConversationError):
    """A second message arrived while the agent is still working on this thread."""


class ApprovalPending(TurnAlreadyRunning):
    """A message arrived while the latest turn waits for the person's approval (docs/adr/0017)."""


class TooManyTurns(ConversationError):
    """The person already has HAICO_MAX_RUNNING_TURNS turns running in other threads (docs/adr/0051)."""


class BranchVanished(ConversationError):
    """The pending branch a turn was to begin in was removed meanwhile (docs/adr/0045)."""


class MessageAlreadyStored(Exception):
    """A message sent again with the id of one already stored (a page whose
    connection dropped as it went, docs/adr/0126): nothing new is stored, and
    the page is told the turn it began."""

    def __init__(self, turn_index: int):
        super().__init__(f"already stored as turn {turn_index}")
        self.turn_index = turn_index

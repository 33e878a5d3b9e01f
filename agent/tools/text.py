"""Small wording helpers shared by the tool bodies."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """A tool's summary that says some of its targets were skipped (locked,
    missing): still a success for the model, shown as skipped in the
    person's reasoning trace."""

    text: str
    skipped: bool = False


def sentence(text: str) -> str:
    """Capitalised and ending with a full stop, for summaries built from service fragments."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def batch_summary(result) -> Summary:
    """A service BatchResult as sentences: what was done, then what was skipped and why."""
    parts = []
    if result.done:
        parts.append(sentence("; ".join(result.done)))
    if result.skipped:
        parts.append("Skipped: " + " ".join(sentence(s) for s in result.skipped))
    return Summary(" ".join(parts) if parts else "Nothing changed.", skipped=bool(result.skipped))

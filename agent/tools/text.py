"""Small wording helpers shared by the tool bodies."""


def sentence(text: str) -> str:
    """Capitalised and ending with a full stop, for summaries built from service fragments."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def batch_summary(result) -> str:
    """A service BatchResult as sentences: what was done, then what was skipped and why."""
    parts = []
    if result.done:
        parts.append(sentence("; ".join(result.done)))
    if result.skipped:
        parts.append("Skipped: " + " ".join(sentence(s) for s in result.skipped))
    return " ".join(parts) if parts else "Nothing changed."

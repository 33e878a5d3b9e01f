"""Events a middleware hands to whoever streams the run."""

from langgraph.config import get_stream_writer


def emit(event) -> None:
    """Hand an event to whoever streams the run (LangGraph's "custom" stream mode)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a graph run
        return
    writer(event)

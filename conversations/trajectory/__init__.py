"""The trajectory map: a thread's conversation family as a graph of turns,
and the read-only preview of one turn (docs/adr/0016).

- layout: the graph's shape and places, pure (no database, no Django);
- reads: the family's graph and a turn's workspace, from the database;
- render: the map's markup;
- publish: bringing every open page of the family up to date;
- access: which turns a person may open and continue from.
"""

from .access import continue_point, is_own_turn
from .publish import map_check, publish_checks_of_families_around, turn_ended_patches
from .reads import family_graph, preview_context
from .render import map_context, navigate_html, render_map

__all__ = [
    "continue_point",
    "family_graph",
    "is_own_turn",
    "map_check",
    "map_context",
    "navigate_html",
    "preview_context",
    "publish_checks_of_families_around",
    "render_map",
    "turn_ended_patches",
]

"""URL templates: a route reversed with a placeholder where a row's id or a
turn's number goes, for the page's JavaScript to fill in (docs/adr/0081).

The routes that take one declare it with the converters below (<row:pk>,
<turn:turn_index>): an id as usual, or its placeholder when reversed. A
request for the placeholder itself finds no route (to_python refuses it).
reverse() percent-encodes braces, so the placeholders are written with
characters a URL path keeps as they are."""

from django.urls import register_converter, reverse
from django.urls.converters import IntConverter

ROW = ":pk"
TURN = ":turn"


class RowConverter(IntConverter):
    regex = "[0-9]+|" + ROW


class TurnConverter(IntConverter):
    regex = "[0-9]+|" + TURN


register_converter(RowConverter, "row")
register_converter(TurnConverter, "turn")


def row_urls(names: dict[str, str], *, thread_id) -> dict[str, str]:
    """{key: URL with ROW for the row's id} for the routes named in `names`."""
    return {key: reverse(name, kwargs={"thread_id": thread_id, "pk": ROW}) for key, name in names.items()}

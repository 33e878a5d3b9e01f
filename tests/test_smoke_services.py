import pytest

from workspace import selectors, services

pytestmark = pytest.mark.django_db


def test_outline_roundtrip(thread):
    services.todos_add_outline(
        thread=thread,
        steps=[{"text": "Outline", "depth": 0}, {"text": "Intro", "depth": 1}, {"text": "Cite", "depth": 0}],
    )
    todos = selectors.todos_for(thread=thread)
    assert selectors.outline_numbers(todos) == ["1", "1.1", "2"]
    services.todo_indent(todo=todos[2])
    todos = selectors.todos_for(thread=thread)
    assert [t.depth for t in todos] == [0, 1, 1]
    services.todo_outdent(todo=todos[1])
    todos = selectors.todos_for(thread=thread)
    assert [t.text for t in todos] == ["Outline", "Cite", "Intro"]
    assert [t.depth for t in todos] == [0, 1, 0]

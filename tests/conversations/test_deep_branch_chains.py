"""A chain of branches of branches, as months of "Continue from here" on
the latest turn make one: the page of the thirtieth costs the statements
of the first's, and its turns' "‹ 2/3 ›" arrows are where its siblings
start (conversations.selectors._family, turn_versions_for; docs/adr/0159).
Runs on SQLite, and on PostgreSQL with DATABASE_URL set."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.branching import fork_thread
from conversations.selectors import family_ids, turn_versions_for
from conversations.turns import slot
from workspace.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)


def _turns(thread, owner, count):
    for n in range(count):
        index, _snapshot = slot.turn_begin(thread=Thread.objects.get(pk=thread.pk), user_message=f"message {n}", person=owner)
        slot.turn_finish(thread=thread, turn_index=index, answer="ok")
    return Thread.objects.get(pk=thread.pk)


def _chain(owner, root, depth):
    """`depth` branches, each from the latest turn of the one before, each with a turn of its own."""
    chain, last = [], root
    for _ in range(depth):
        last = _turns(fork_thread(source=last, turn_index=last.turn_index, user=owner), owner, 1)
        chain.append(last)
    return chain


def _page_statements(client, thread) -> int:
    client.get(f"/threads/{thread.pk}/workspace/")  # templates compiled, caches warm
    with CaptureQueriesContext(connection) as statements:
        assert client.get(f"/threads/{thread.pk}/workspace/").status_code == 200
    return len(statements)


def test_the_page_of_a_branch_thirty_deep_costs_what_the_first_ones_does(owner, thread, client):
    client.force_login(owner)
    root = _turns(thread, owner, 5)
    chain = _chain(owner, root, 30)
    # Before: two statements more a level (one up the links, one down), 86 at thirty deep against 28.
    assert _page_statements(client, chain[-1]) == _page_statements(client, chain[0])
    assert family_ids(thread_id=chain[-1].pk) == {root.pk, *(branch.pk for branch in chain)}


def test_the_arrows_of_a_deep_branch_are_where_its_siblings_start(owner, thread):
    root = _turns(thread, owner, 5)
    chain = _chain(owner, root, 12)
    # A second version of turn 3 (a branch at turn 2 of the root) and of the
    # chain's eighth branch's own turn (a sibling from the seventh).
    root_sibling = _turns(fork_thread(source=root, turn_index=2, user=owner), owner, 1)
    seventh = chain[6]
    sibling = _turns(fork_thread(source=seventh, turn_index=seventh.turn_index, user=owner), owner, 1)

    versions = turn_versions_for(thread=chain[-1])
    eighth_turn = chain[7].turn_index
    assert sorted(versions) == [3, eighth_turn]
    assert (versions[3].position, versions[3].count, versions[3].next_id) == (1, 2, root_sibling.pk)
    assert (versions[eighth_turn].count, versions[eighth_turn].next_id) == (2, sibling.pk)
    assert sorted(turn_versions_for(thread=sibling)) == [3, eighth_turn]
    assert turn_versions_for(thread=sibling)[eighth_turn].previous_id == chain[7].pk

"""Presence, the service and the page (conversations.presence, docs/adr/0087):
who has a thread open now, one presence per person however many tabs, and
the rows of a server that died removed."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from conversations import presence
from conversations.models import OpenPage
from conversations.turns import process

pytestmark = pytest.mark.django_db


def _names(thread):
    return [person.name for person in presence.present_people(thread_id=thread.pk)]


def _open(thread, user, channel, **fields):
    presence.presence_open(thread_id=thread.pk, user=user, channel_name=channel)
    if fields:
        OpenPage.objects.filter(channel_name=channel).update(**fields)


def test_several_tabs_of_two_people_are_two_presences_until_each_closes_their_last(owner, other_user, thread):
    for channel in ("owner-1", "owner-2", "owner-3"):
        _open(thread, owner, channel)
    for channel in ("other-1", "other-2"):
        _open(thread, other_user, channel)
    assert _names(thread) == ["intruder", "owner"]
    assert OpenPage.objects.filter(thread=thread).count() == 5

    presence.presence_close(channel_name="owner-1")
    presence.presence_close(channel_name="owner-2")
    assert _names(thread) == ["intruder", "owner"]
    presence.presence_close(channel_name="owner-3")
    assert _names(thread) == ["intruder"]
    presence.presence_close(channel_name="other-1")
    presence.presence_close(channel_name="other-2")
    assert _names(thread) == []
    assert not OpenPage.objects.exists()


def test_closing_a_socket_twice_or_one_never_recorded_changes_nothing(owner, thread):
    _open(thread, owner, "owner-1")
    presence.presence_close(channel_name="never-opened")
    presence.presence_close(channel_name="owner-1")
    presence.presence_close(channel_name="owner-1")
    assert _names(thread) == []


def test_a_restarted_server_removes_its_predecessors_rows_and_no_other_servers(settings, owner, other_user, thread):
    settings.HAICO_INSTANCE = "web-1"
    _open(thread, owner, "dead-boot", boot="an-earlier-boot")
    _open(thread, other_user, "other-server", instance="web-2", boot="its-boot")
    _open(thread, owner, "this-boot")

    assert presence.presence_release_predecessor() == 1

    assert set(OpenPage.objects.values_list("channel_name", flat=True)) == {"other-server", "this-boot"}
    assert _names(thread) == ["intruder", "owner"]


def test_rows_no_server_refreshed_are_swept_and_this_servers_own_are_kept_fresh(owner, other_user, thread):
    long_ago = timezone.now() - presence.STALE_AFTER - timedelta(seconds=5)
    _open(thread, other_user, "dead-server", instance="web-dead", boot="gone", seen_at=long_ago)
    _open(thread, owner, "this-server", seen_at=long_ago)

    _open(thread, owner, "closed-here", seen_at=long_ago)  # its removal failed when its socket closed

    # Only this process's rows of sockets it still has open are refreshed.
    assert presence.presence_keepalive(channel_names={"this-server", "dead-server"}) == 1
    assert presence.presence_sweep() == 1  # one thread changed

    assert list(OpenPage.objects.values_list("channel_name", "instance", "boot")) == [
        ("this-server", process.instance(), process.BOOT)
    ]
    assert _names(thread) == ["owner"]


def test_a_deleted_thread_or_person_takes_their_rows_with_them(owner, other_user, thread):
    _open(thread, owner, "owner-1")
    _open(thread, other_user, "other-1")
    other_user.delete()
    assert _names(thread) == ["owner"]
    thread.delete()
    assert not OpenPage.objects.exists()


def test_the_partial_shows_initials_with_the_full_name_on_hover_and_an_accessible_label(owner, other_user, thread):
    owner.first_name, owner.last_name = "Ada", "Lovelace"
    owner.save()
    other_user.first_name = "<b>Bob</b>"
    other_user.save()
    _open(thread, owner, "owner-1")
    _open(thread, other_user, "other-1")

    html = presence.render_presence(thread_id=thread.pk, oob=True)

    assert 'id="presence"' in html and 'hx-swap-oob="true"' in html
    assert 'aria-label="Open now: &lt;b&gt;Bob&lt;/b&gt;, Ada Lovelace"' in html
    assert '<span class="presence-person" title="&lt;b&gt;Bob&lt;/b&gt;">&lt;</span>' in html
    assert '<span class="presence-person" title="Ada Lovelace">AL</span>' in html
    assert "<b>" not in html


@pytest.mark.parametrize(("name", "expected"), [("Ada Lovelace", "AL"), ("owner", "O"), ("ada b. king", "AK"), ("  ", "?")])
def test_initials_are_the_first_and_last_words_first_letters(name, expected):
    assert presence.initials(name) == expected


def test_the_owners_page_shows_them_present_before_their_socket_opens_and_the_others_already_there(
    owner_client, owner, other_user, thread
):
    _open(thread, other_user, "other-1")

    html = owner_client.get(f"/threads/{thread.pk}/workspace/").content.decode()

    assert 'aria-label="Open now: intruder, owner"' in html
    assert '<span class="presence-person" title="owner">O</span>' in html
    assert 'hx-swap-oob="true"' not in html.split('id="presence"')[1].split(">")[0]


def test_another_users_page_request_is_a_404_and_shows_nobody(client, other_user, owner, thread):
    _open(thread, owner, "owner-1")
    client.force_login(other_user)
    response = client.get(f"/threads/{thread.pk}/workspace/")
    assert response.status_code == 404
    assert b"Open now" not in response.content


def test_a_team_shows_four_initials_then_how_many_more_each_named_on_hover(owner, django_user_model, thread):
    for name in ("bea", "cal", "dee", "eve", "fay"):
        _open(thread, django_user_model.objects.create_user(username=name, password="a-long-pass-4826"), f"{name}-1")
    _open(thread, owner, "owner-1")

    html = presence.render_presence(thread_id=thread.pk)

    assert 'aria-label="Open now: bea, cal, dee, eve, fay, owner"' in html
    assert re.findall(r'class="presence-person" title="(\w+)"', html) == ["bea", "cal", "dee", "eve"]
    # A wide screen shows these four and "+2"; a narrower one the first and "+5" (static/css/haico.css).
    assert '<span class="presence-more presence-more-wide" title="fay, owner">+2</span>' in html
    assert '<span class="presence-more presence-more-narrow" title="cal, dee, eve, fay, owner">+5</span>' in html


def test_one_person_has_no_more_to_count(owner, thread):
    _open(thread, owner, "owner-1")
    assert "presence-more" not in presence.render_presence(thread_id=thread.pk)

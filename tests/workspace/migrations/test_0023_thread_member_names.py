"""workspace/0023: each existing member becomes one name the thread is
shared under (the name the owner typed, their username otherwise, the
link's when they came by it), with their role; reversing gives `named_as`
back."""

import pytest

from tests.support.migrations import migrate_to, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("workspace", "0022_the_last_save_each_editor_page_had_written")]
AFTER = [("workspace", "0023_thread_member_names")]


def test_each_member_keeps_the_name_the_owner_gave_and_their_role(owner, django_user_model):
    people = [django_user_model.objects.create_user(username=name, email=f"{name}@corp.example") for name in ("ed", "vi", "li")]
    apps = start_at(BEFORE, people=[owner, *people])
    Thread, Member = apps.get_model("workspace", "Thread"), apps.get_model("workspace", "ThreadMember")
    thread = Thread.objects.create(owner_id=owner.pk, title="Shared")
    Member.objects.create(thread=thread, user_id=people[0].pk, role="editor", named_as="ED@corp.example")
    Member.objects.create(thread=thread, user_id=people[1].pk, role="viewer")
    Member.objects.create(thread=thread, user_id=people[2].pk, role="viewer", via_link=True)
    try:
        apps = migrate_to(AFTER)
        Name = apps.get_model("workspace", "ThreadMemberName")
        assert sorted(Name.objects.values_list("member__user__username", "name", "role", "by_link")) == [
            ("ed", "ED@corp.example", "editor", False),
            ("li", "li", "viewer", True),
            ("vi", "vi", "viewer", False),
        ]
        apps = migrate_to(BEFORE)
        Member = apps.get_model("workspace", "ThreadMember")
        assert sorted(Member.objects.values_list("user__username", "named_as")) == [
            ("ed", "ED@corp.example"),
            ("li", ""),
            ("vi", ""),
        ]
    finally:
        newest_schema_restored()

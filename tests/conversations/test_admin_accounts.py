"""Staff manage accounts in the admin (conversations.admin_accounts):
deleting one takes what is the account's own with it; an account that owns
threads is not deleted (docs/adr/0129)."""

import pytest
from django.contrib.auth import get_user_model

from conversations import services as conversation_services
from conversations import sharing, tokens
from conversations.models import AccessToken, Feedback, ModelUsage, Turn
from conversations.turns import slot
from workspace.models import Thread, ThreadMember

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture
def editor(owner, thread):
    """Someone the owner's thread is shared with, who ran a turn there (a
    model call), left feedback on it and made an access token."""
    editor = User.objects.create_user(username="ed", password="pw-123456789")
    sharing.thread_member_add(thread=thread, who="ed", role="editor", by=owner)
    turn, _ = slot.turn_begin(thread=thread, user_message="Start the review", person=editor)
    slot.turn_finish(thread=thread, turn_index=turn)
    ModelUsage.objects.create(user=editor, thread=thread, turn_index=1, provider_name="env", model="m", input_tokens=5)
    conversation_services.feedback_add(thread=thread, user=editor, turn_index=1, rating=4, comment="useful")
    tokens.token_create(user=editor, name="laptop")
    return editor


def _delete_page(user):
    return f"/admin/auth/user/{user.pk}/delete/"


def test_staff_delete_an_editors_account_with_its_model_calls_tokens_and_feedback(staff_client, owner, thread, editor):
    page = staff_client.get(_delete_page(editor)).content.decode()
    assert "Cannot delete user" not in page and "<li>Model calls: 1</li>" in page

    response = staff_client.post(_delete_page(editor), {"post": "yes"})

    assert response.status_code == 302
    assert not User.objects.filter(pk=editor.pk).exists()
    for model in (ModelUsage, AccessToken, Feedback, ThreadMember):
        assert not model.objects.exists(), model
    # The owner's thread is as it was; the turn keeps the name of who sent it.
    assert Thread.objects.get(pk=thread.pk).owner == owner
    assert Turn.objects.get(thread=thread).person_username == "ed"


def test_staff_delete_such_accounts_from_the_list_too(staff_client, editor):
    response = staff_client.post(
        "/admin/auth/user/", {"action": "delete_selected", "_selected_action": [editor.pk], "post": "yes"}, follow=True
    )
    assert response.status_code == 200
    assert not User.objects.filter(pk=editor.pk).exists()


def test_an_account_that_owns_threads_is_not_deleted_and_the_page_says_why(staff_client, owner, thread, editor):
    page = staff_client.get(_delete_page(owner)).content.decode()
    assert "Cannot delete user" in page
    blocked = page.split("following types of objects", 1)[1].split("</ul>", 1)[0]
    assert "<li>thread</li>" in blocked and "model call" not in blocked

    assert staff_client.post(_delete_page(owner), {"post": "yes"}).status_code == 403
    assert User.objects.filter(pk=owner.pk).exists() and Thread.objects.filter(pk=thread.pk).exists()

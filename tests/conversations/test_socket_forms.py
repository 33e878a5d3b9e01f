"""The thread socket's message forms: a JSON message's fields are checked
as the chat form sends them, with the message the person sees, and the
consumer is handed one validated ChatMessage."""

import pytest

from conversations.forms import ApprovalAnswerForm, ChatMessage, ChatMessageForm, RetryForm


def test_a_chat_message_is_handed_over_exactly_as_typed():
    form = ChatMessageForm({"message": "  two spaces kept  ", "model": "env:gpt", "mode": "plan"})
    assert form.is_valid(), form.errors
    assert form.chat_message() == ChatMessage(text="  two spaces kept  ", model="env:gpt", mode="plan")


def test_no_model_and_no_mode_mean_the_threads_own():
    form = ChatMessageForm({"message": "hi", "model": ""})
    assert form.is_valid()
    sent = form.chat_message()
    assert (sent.model, sent.mode, sent.continue_from) == (None, None, None)


@pytest.mark.parametrize(
    "data, error",
    [
        ({}, "Message must be text."),
        ({"message": ["a"]}, "Message must be text."),
        ({"message": " "}, "Message cannot be empty."),
        ({"message": "hi", "model": 7}, "Choose a model from the list."),
        ({"message": "hi", "model": {"a": 1}}, "Choose a model from the list."),
        ({"message": "hi", "model": "m" * 201}, "Choose a model from the list."),
        ({"message": "hi", "mode": "destroy"}, "Choose a mode"),
        ({"message": "hi", "mode": ""}, "Choose a mode"),
        ({"message": "hi", "mode": ["plan"]}, "Choose a mode"),
    ],
)
def test_a_chat_message_of_the_wrong_kind_is_refused_with_what_to_do(data, error):
    form = ChatMessageForm(data)
    assert not form.is_valid()
    assert error in form.first_error()


def test_continue_from_here_carries_the_point_for_the_map_to_check():
    form = ChatMessageForm({"message": "hi", "continue_thread": "abc", "continue_turn": 3})
    assert form.is_valid()
    sent = form.chat_message()
    assert sent.continue_from == ("abc", 3)
    # One of the two without the other still asks to continue (and the map refuses it).
    form = ChatMessageForm({"message": "hi", "continue_turn": 3})
    assert form.is_valid() and form.chat_message().continue_from == (None, 3)


@pytest.mark.parametrize("turn", [3, "3"])
def test_a_turn_number_is_a_number_or_its_digits(turn):
    form = RetryForm({"turn": turn})
    assert form.is_valid() and form.cleaned_data["turn"] == 3


@pytest.mark.parametrize(
    "turn, error",
    [
        (None, "Choose a turn to retry."),
        (True, "Choose a turn to retry."),
        (2.5, "Choose a turn to retry."),
        ("2.0", "Choose a turn to retry."),
        ("x", "Choose a turn to retry."),
        ([1], "Choose a turn to retry."),
        (-1, "That turn does not exist in this thread."),
        (2**31, "That turn does not exist in this thread."),
    ],
)
def test_a_turn_number_of_the_wrong_kind_is_refused(turn, error):
    form = RetryForm({"turn": turn})
    assert not form.is_valid() and form.first_error() == error


def test_an_approval_answer_is_approve_or_reject_for_a_turn():
    form = ApprovalAnswerForm({"turn": 1, "decision": "approve"})
    assert form.is_valid() and form.cleaned_data == {"turn": 1, "decision": "approve"}
    for data, error in (
        ({"turn": 1, "decision": "maybe"}, "Choose Approve or Reject."),
        ({"turn": 1}, "Choose Approve or Reject."),
        ({"turn": "x", "decision": "reject"}, "Choose a turn to answer."),
    ):
        form = ApprovalAnswerForm(data)
        assert not form.is_valid() and form.first_error() == error

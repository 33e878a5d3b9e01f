"""The conversation's HTTP input: sign-up, feedback on a turn, and the
chat's per-message Edit.

The form refuses what the service (conversations.services) would, with a
message a person can act on; `first_error` is the one the panel shows."""

from django import forms
from django.conf import settings
from django.contrib.auth.forms import UserCreationForm

from workspace.forms import RuleTextField
from workspace.models import Artifact, Thread

from .models import (
    FEEDBACK_COMMENT_MAX_CHARS,
    FEEDBACK_RATING_MAX,
    FEEDBACK_RATING_MIN,
    Feedback,
)


class SignupForm(UserCreationForm):
    """A username and a password; an email address only if the person wants
    to be able to reset a forgotten password (the reset mails it there)."""

    email = forms.EmailField(
        label="Email (optional)", required=False, max_length=254,
        help_text="Only used to send you a link if you forget your password.",
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class ChooseModelForm(forms.Form):
    """The chat's model selector; which names are offered is the service's
    check (conversations.services.thread_choose_model)."""

    model = forms.CharField(max_length=200, error_messages={"required": "Choose a model from the list."})


RATING_WORDS = {1: "poor", 2: "weak", 3: "fair", 4: "good", 5: "excellent"}
RATING_MESSAGE = f"Choose a rating from {FEEDBACK_RATING_MIN} (poor) to {FEEDBACK_RATING_MAX} (excellent)."


class FeedbackForm(forms.Form):
    scope = forms.ChoiceField(
        label="About", choices=Feedback.Scope.choices,
        error_messages={"required": "Choose what the feedback is about.",
                        "invalid_choice": "Choose what the feedback is about from the list."},
    )
    artifact = forms.ModelChoiceField(
        label="Which artifact", queryset=Artifact.objects.none(), required=False,
        error_messages={"invalid_choice": "That artifact is not part of this thread at this turn."},
    )
    aspect = forms.ChoiceField(
        label="Aspect", choices=Feedback.Aspect.choices,
        error_messages={"required": "Choose an aspect.", "invalid_choice": "Choose an aspect from the list."},
    )
    rating = forms.TypedChoiceField(
        label="Rating", coerce=int, widget=forms.RadioSelect,
        choices=[(n, f"{n} ({RATING_WORDS[n]})") for n in range(FEEDBACK_RATING_MIN, FEEDBACK_RATING_MAX + 1)],
        error_messages={"required": RATING_MESSAGE, "invalid_choice": RATING_MESSAGE},
    )
    comment = RuleTextField(
        label="Comment (optional)", max_chars=FEEDBACK_COMMENT_MAX_CHARS, allow_empty=True,
        widget=forms.Textarea(attrs={"rows": 2, "maxlength": FEEDBACK_COMMENT_MAX_CHARS}),
    )

    def __init__(self, *args, thread: Thread, turn_index: int, **kwargs):
        super().__init__(*args, **kwargs)
        # Only artifacts that existed by the end of this turn.
        self.fields["artifact"].queryset = Artifact.objects.filter(
            thread=thread, turn_index__lte=turn_index
        ).order_by("pk")

    def clean(self):
        data = super().clean()
        if data.get("scope") == Feedback.Scope.ARTIFACT and not data.get("artifact") and "artifact" not in self.errors:
            self.add_error("artifact", "Choose which artifact the feedback is about.")
        if data.get("comment") is None:
            data["comment"] = ""
        return data

    def first_error(self) -> str:
        for field in self.fields:
            if field in self.errors:
                return self.errors[field][0]
        return self.non_field_errors()[0] if self.non_field_errors() else "That feedback could not be saved."

    def service_kwargs(self) -> dict:
        data = self.cleaned_data
        return {name: data[name] for name in ("scope", "aspect", "rating", "comment", "artifact")}


class EditTurnForm(forms.Form):
    # Kept exactly as typed, like a chat message (turns.guard.clean_user_message).
    message = forms.CharField(strip=False, max_length=settings.HAICO_MESSAGE_MAX_CHARS)

    def clean_message(self):
        message = self.cleaned_data["message"]
        if not message.strip():
            raise forms.ValidationError("Write the message to send.")
        return message

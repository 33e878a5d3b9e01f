"""The conversation's HTTP input: sign-up, feedback on a turn, and the
chat's per-message Edit.

The form refuses what the service (conversations.services) would, with a
message a person can act on; `first_error` is the one the panel shows."""

from django import forms
from django.conf import settings
from django.contrib.auth.forms import UserCreationForm

from agent.context import Selection
from workspace import selectors as workspace_selectors
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
        label="Email (optional)",
        required=False,
        max_length=254,
        help_text="Only used to send you a link if you forget your password.",
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def __init__(self, *args, invite_email: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        if invite_email:
            # The invitation is for this address (conversations.signup): shown, not editable.
            field = self.fields["email"]
            field.initial, field.disabled, field.label = invite_email, True, "Email"
            field.help_text = "The address this invitation was made for."


class ChooseModelForm(forms.Form):
    """The chat's model selector; which names are offered is the service's
    check (conversations.services.thread_choose_model)."""

    model = forms.CharField(max_length=200, error_messages={"required": "Choose a model from the list."})


RATING_WORDS = {1: "poor", 2: "weak", 3: "fair", 4: "good", 5: "excellent"}
RATING_MESSAGE = f"Choose a rating from {FEEDBACK_RATING_MIN} (poor) to {FEEDBACK_RATING_MAX} (excellent)."


class FeedbackForm(forms.Form):
    scope = forms.ChoiceField(
        label="About",
        choices=Feedback.Scope.choices,
        error_messages={
            "required": "Choose what the feedback is about.",
            "invalid_choice": "Choose what the feedback is about from the list.",
        },
    )
    artifact = forms.ModelChoiceField(
        label="Which artifact",
        queryset=Artifact.objects.none(),
        required=False,
        empty_label="Choose an artifact",
        error_messages={"invalid_choice": "That artifact is not part of this thread at this turn."},
    )
    aspect = forms.ChoiceField(
        label="Aspect",
        choices=Feedback.Aspect.choices,
        error_messages={"required": "Choose an aspect.", "invalid_choice": "Choose an aspect from the list."},
    )
    rating = forms.TypedChoiceField(
        label="Rating",
        coerce=int,
        widget=forms.RadioSelect,
        choices=[(n, f"{n} ({RATING_WORDS[n]})") for n in range(FEEDBACK_RATING_MIN, FEEDBACK_RATING_MAX + 1)],
        error_messages={"required": RATING_MESSAGE, "invalid_choice": RATING_MESSAGE},
    )
    comment = RuleTextField(
        label="Comment (optional)",
        max_chars=FEEDBACK_COMMENT_MAX_CHARS,
        allow_empty=True,
        widget=forms.Textarea(attrs={"rows": 2, "maxlength": FEEDBACK_COMMENT_MAX_CHARS}),
    )

    def __init__(self, *args, thread: Thread, turn_index: int, **kwargs):
        super().__init__(*args, **kwargs)
        # Only artifacts that existed by the end of this turn.
        self.fields["artifact"].queryset = Artifact.objects.filter(thread=thread, turn_index__lte=turn_index).order_by("pk")
        if not self.fields["artifact"].queryset.exists():
            self.fields["artifact"].empty_label = "No artifacts by this turn"

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


MODE_MESSAGE = f"Choose a mode: one of {', '.join(Thread.Mode.labels)}."


class ModeForm(forms.Form):
    """The chat's Mode selector (docs/adr/0018)."""

    mode = forms.ChoiceField(
        choices=Thread.Mode.choices, error_messages={"required": MODE_MESSAGE, "invalid_choice": MODE_MESSAGE}
    )


class LayoutForm(forms.Form):
    """A side rail of the workspace page collapsed or opened (docs/adr/0022)."""

    rail = forms.ChoiceField(
        choices=[("left", "Left"), ("right", "Right")],
        error_messages={"required": "Choose the left or the right rail.", "invalid_choice": "Choose the left or the right rail."},
    )
    collapsed = forms.BooleanField(required=False)


class ThreadSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=200)


SELECTION_UNREADABLE = "The selection could not be read, so the message was sent without it."
SELECTION_DROPPED = "The selected text is no longer in the document as it was selected, so the message was sent without it."
# A note for the page a rerun or "Continue from here" opens on its new branch:
# the address carries the key (?note=...), never the text.
PAGE_NOTES = {"selection-dropped": SELECTION_DROPPED, "selection-unreadable": SELECTION_UNREADABLE}


def page_note_query(note: str) -> str:
    """ "?note=<key>" for a note the branch's page should show, or ""."""
    key = next((key for key, text in PAGE_NOTES.items() if text == note), "")
    return f"?note={key}" if key else ""


class SelectionForm(forms.Form):
    """ "Ask about selection": the passage of the document text the person
    selected, as character offsets [start, end) and the text itself. It must
    still be exactly that text of the document as saved, or it is dropped
    (the message goes without it)."""

    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=1)
    text = forms.CharField(strip=False, max_length=settings.HAICO_DOCUMENT_MAX_CHARS)

    def __init__(self, *args, content: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.content = content

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        start, end, text = data["start"], data["end"], data["text"]
        if not (start < end <= len(self.content)) or self.content[start:end] != text:
            raise forms.ValidationError(SELECTION_DROPPED)
        return data


def checked_selection(*, thread: Thread, raw) -> tuple[Selection | None, str]:
    """(the selection a chat message carries, checked against the thread's
    document; a note for the person when one was sent but is dropped)."""
    if raw in (None, "", {}):
        return None, ""
    if not isinstance(raw, dict):
        return None, SELECTION_UNREADABLE
    # Only plain values: a nested object or list is not an offset or a text.
    fields = {name: raw.get(name) for name in ("start", "end", "text")}
    if any(not isinstance(v, (str, int)) or isinstance(v, bool) for v in fields.values()):
        return None, SELECTION_UNREADABLE
    form = SelectionForm(fields, content=workspace_selectors.document_for(thread=thread).content)
    if not form.is_valid():
        # A field of its own refused (no text, an offset below 0): not a selection at all.
        unreadable = any(name in form.errors for name in form.fields)
        return None, SELECTION_UNREADABLE if unreadable else SELECTION_DROPPED
    data = form.cleaned_data
    return Selection(start=data["start"], end=data["end"], text=data["text"]), ""

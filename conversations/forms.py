"""The conversation's HTTP input: sign-up, feedback on a turn, and the
chat's per-message Edit.

The form refuses what the service (conversations.services) would, with a
message a person can act on; `first_error` is the one the panel shows."""

from dataclasses import dataclass

from django import forms
from django.conf import settings
from django.contrib.auth.forms import UserCreationForm
from django.core.validators import RegexValidator

from agent.context import Selection
from workspace import selectors as workspace_selectors
from workspace.errors import UserFacingError
from workspace.forms import RuleTextField
from workspace.models import Artifact, Thread, ThreadMember

from .models import (
    FEEDBACK_COMMENT_MAX_CHARS,
    FEEDBACK_RATING_MAX,
    FEEDBACK_RATING_MIN,
    Feedback,
)
from .turns.message_checks import (
    SELECTION_DROPPED,
    SELECTION_NOTES,
    SELECTION_UNREADABLE,
    clean_user_message,
    selection_note_key,
)


class SignupForm(UserCreationForm):
    """A username and a password; an email address only if the person wants
    to be able to reset a forgotten password (the reset mails it there). The
    Share dialog finds people by it too, which its help says (docs/adr/0137)."""

    email = forms.EmailField(
        label="Email (optional)",
        required=False,
        max_length=254,
        help_text=(
            "Used to send you a link if you forget your password, and by people who share a thread with you: "
            "they may add you by it, and then see your username."
        ),
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
    # Kept exactly as typed, like a chat message (turns.message_checks.clean_user_message).
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


# A note for the page a rerun or "Continue from here" opens on its new branch:
# the address carries the key (?note=...), never the text.
PAGE_NOTES = SELECTION_NOTES


def page_note_query(note: str) -> str:
    """ "?note=<key>" for a note the branch's page should show, or ""."""
    key = selection_note_key(note)
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


# --- the thread socket's messages (conversations.consumers) ---------------------------
#
# A socket message is JSON, so a field may arrive as any JSON value: these
# forms refuse what is not the kind of value the chat form sends, with the
# message the person sees, and give the consumer one validated object.


class SocketTextField(forms.CharField):
    """Text exactly as sent: a number, list or object is refused, not turned into its string."""

    def __init__(self, **kwargs):
        kwargs.setdefault("strip", False)
        super().__init__(**kwargs)

    def to_python(self, value):
        if value not in self.empty_values and not isinstance(value, str):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


@dataclass(frozen=True)
class ChatMessage:
    """A chat message as the socket received and checked it. `selection` and
    the "Continue from here" point are checked against the database by the
    consumer (checked_selection, trajectory.continue_point): they say which
    passage and which turn, and only the saved document and the person's
    map can tell whether those still exist."""

    text: str
    model: str | None
    mode: str | None
    selection: object = None
    continue_from: tuple[object, object] | None = None
    # The page's id for this message, the same when it sends it again (docs/adr/0126).
    client_message_id: str = ""


class SocketForm(forms.Form):
    def first_error(self) -> str:
        for field in self.fields:
            if field in self.errors:
                return self.errors[field][0]
        return self.non_field_errors()[0]


MODEL_CHOICE_MESSAGE = "Choose a model from the list."
UNREADABLE_MESSAGE = "That message could not be read; reload the page and try again."


class ChatMessageForm(SocketForm):
    """{"message", "model", "mode", "selection", "continue_thread", "continue_turn"}."""

    # Any JSON value: the message check says what is wrong with it (turns.message_checks.clean_user_message).
    message = forms.Field(required=False)
    model = SocketTextField(
        required=False,
        max_length=200,
        error_messages={"invalid": MODEL_CHOICE_MESSAGE, "max_length": MODEL_CHOICE_MESSAGE},
    )
    mode = forms.ChoiceField(choices=Thread.Mode.choices, required=False, error_messages={"invalid_choice": MODE_MESSAGE})
    client_message_id = SocketTextField(
        required=False,
        max_length=64,
        validators=[RegexValidator(r"\A[A-Za-z0-9_-]{16,64}\Z", message=UNREADABLE_MESSAGE)],
        error_messages={"invalid": UNREADABLE_MESSAGE, "max_length": UNREADABLE_MESSAGE},
    )

    def clean_message(self):
        try:
            return clean_user_message(self.cleaned_data["message"])
        except UserFacingError as exc:
            raise forms.ValidationError(exc.message) from None

    def clean_mode(self):
        # Sent but empty is not a mode; not sent at all keeps the thread's.
        if self.data.get("mode") is not None and not self.cleaned_data["mode"]:
            raise forms.ValidationError(MODE_MESSAGE)
        return self.cleaned_data["mode"] or None

    def chat_message(self) -> ChatMessage:
        data = self.cleaned_data
        continues = "continue_thread" in self.data or "continue_turn" in self.data
        return ChatMessage(
            text=data["message"],
            model=data["model"] or None,
            mode=data["mode"],
            selection=self.data.get("selection"),
            continue_from=(self.data.get("continue_thread"), self.data.get("continue_turn")) if continues else None,
            client_message_id=data["client_message_id"],
        )


TURN_MAX = 2**31 - 1  # beyond any column's reach, on every database


def turn_number_field(action: str) -> forms.IntegerField:
    return forms.IntegerField(
        min_value=0,
        max_value=TURN_MAX,
        error_messages={
            "required": f"Choose a turn to {action}.",
            "invalid": f"Choose a turn to {action}.",
            "min_value": "That turn does not exist in this thread.",
            "max_value": "That turn does not exist in this thread.",
        },
    )


class StrictTurnNumberMixin:
    """A turn number is a JSON number or a string of digits: not true, 2.5 or "2.0"."""

    def clean_turn(self):
        raw = self.data.get("turn")
        if isinstance(raw, bool) or not (isinstance(raw, int) or (isinstance(raw, str) and raw.isascii() and raw.isdigit())):
            raise forms.ValidationError(self.fields["turn"].error_messages["invalid"])
        return self.cleaned_data["turn"]


class RetryForm(StrictTurnNumberMixin, SocketForm):
    """{"action": "retry", "turn": N}."""

    turn = turn_number_field("retry")


APPROVAL_DECISION_MESSAGE = "Choose Approve or Reject."


class ApprovalAnswerForm(StrictTurnNumberMixin, SocketForm):
    """{"action": "approval", "turn": N, "decision": "approve" | "reject"}."""

    decision = forms.ChoiceField(
        choices=[("approve", "Approve"), ("reject", "Reject")],
        error_messages={"required": APPROVAL_DECISION_MESSAGE, "invalid_choice": APPROVAL_DECISION_MESSAGE},
    )
    turn = turn_number_field("answer")


class ShareRoleForm(forms.Form):
    """A person's role in the Share dialog (conversations.sharing.thread_member_set_role)."""

    role = forms.ChoiceField(choices=ThreadMember.Role.choices, error_messages={"invalid_choice": "Choose Viewer or Editor."})

    def first_error(self) -> str:
        return next(iter(self.errors.values()))[0]


class ShareAddForm(ShareRoleForm):
    """The Share dialog's "Add person" (conversations.sharing.thread_member_add)."""

    who = forms.CharField(max_length=254, error_messages={"required": "Enter the username or email of the person to add."})

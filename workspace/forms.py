"""The workspace's HTTP input, validated at the edge with Django forms.

Text fields apply the one text rule (workspace.text.clean_text), so a form
refuses exactly what the service would, with the same message; the services
still check it for every other caller (the agent's tools). Only what a
service alone can judge (locks, indexes, tree validity, versions) is left
to it. `first_error(form)` is the message a panel shows.
"""

from django import forms
from django.conf import settings
from django.core.validators import RegexValidator

from .errors import InvalidInput
from .models import (
    DOCUMENT_TITLE_MAX_CHARS,
    OBJECTIVE_MAX_CHARS,
    PREFERENCE_SUBTITLE_MAX_CHARS,
    PREFERENCE_TITLE_MAX_CHARS,
    TODO_TEXT_MAX_CHARS,
    PageSave,
    Preference,
)
from .text import clean_text, one_line
from .text_splice import TextSplice

TRUE_VALUES = {"1", "true", "on", "yes"}
FALSE_VALUES = {"0", "false", "off", "no"}


class RuleTextField(forms.Field):
    """Text under the one text rule. Missing (None) stays None when the
    field is not required, meaning "leave it as it is"."""

    def __init__(self, *, label: str, max_chars: int, allow_empty: bool = False, strip: bool = True, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(label=label, **kwargs)
        self.max_chars, self.allow_empty, self.strip = max_chars, allow_empty, strip
        self.keep_missing = not kwargs["required"]

    def to_python(self, value):
        return value

    def validate(self, value):
        pass  # clean() below is the whole rule

    def clean(self, value):
        if value is None and self.keep_missing:
            return None
        if isinstance(value, str):
            # Browsers send textarea line breaks as CRLF; we store plain newlines.
            value = value.replace("\r\n", "\n").replace("\r", "\n")
        try:
            return clean_text(
                value if value is not None else "",
                label=str(self.label),  # the str it was made with
                max_chars=self.max_chars,
                allow_empty=self.allow_empty,
                strip=self.strip,
            )
        except InvalidInput as exc:
            raise forms.ValidationError(exc.message) from None


class FlagField(forms.Field):
    """A yes/no value (1/0, true/false, on/off, yes/no); anything else is refused, not guessed."""

    def __init__(self, *, question: str, **kwargs):
        kwargs.setdefault("required", True)
        super().__init__(**kwargs)
        self.question = question

    def clean(self, value):
        normalised = str(value).strip().lower() if value is not None else None
        if normalised in TRUE_VALUES:
            return True
        if normalised in FALSE_VALUES:
            return False
        shown = "" if value is None else f", not {value!r}"
        raise forms.ValidationError(f"Say whether {self.question} (1 or 0){shown}.")


def shown_field(label: str, max_chars: int) -> RuleTextField:
    """What the person's page showed a row's field as, sent with their edit
    so a change someone made since is not replaced unseen (docs/adr/0125).
    Left out (a page or client from before it): None, the edit saves as before."""
    return RuleTextField(label=f"The {label} your page showed", max_chars=max_chars, allow_empty=True)


class ObjectiveForm(forms.Form):
    text = RuleTextField(label="Objective", max_chars=OBJECTIVE_MAX_CHARS, required=True)
    was = shown_field("objective", OBJECTIVE_MAX_CHARS)


class StepTextForm(forms.Form):
    text = RuleTextField(label="Step text", max_chars=TODO_TEXT_MAX_CHARS, required=True)


class StepEditForm(StepTextForm):
    was = shown_field("step text", TODO_TEXT_MAX_CHARS)


SHOWN_NUMBER = "The step's number as your page showed it must be an outline number such as 2.1."


OUTLINE_NUMBER = r"^[1-9][0-9]{0,5}(\.[1-9][0-9]{0,5}){0,30}$"


class StepAtForm(forms.Form):
    """Where the person's page showed the step they indent, outdent or move:
    its outline number (its depth and place), docs/adr/0125. Left out: the
    step moves as before."""

    number = forms.RegexField(
        OUTLINE_NUMBER,
        required=False,
        strip=True,
        error_messages={"invalid": SHOWN_NUMBER, "null_characters_not_allowed": SHOWN_NUMBER},
    )

    def clean_number(self):
        return self.cleaned_data["number"] or None


class StepDoneForm(forms.Form):
    done = FlagField(question="the step is done")


class StepMoveForm(StepAtForm):
    direction = forms.ChoiceField(
        choices=[("up", "up"), ("down", "down")],
        error_messages={"required": "Direction must be 'up' or 'down'.", "invalid_choice": "Direction must be 'up' or 'down'."},
    )


SHOWN_BEFORE = (
    "The number your page showed for the step it was dropped before must be an outline number such as 2.1, "
    "or empty when it was dropped at the end of its level."
)
SHOWN_IN_PART = "Send both numbers your page showed for a drag (the step's and where it was dropped), or neither."


class StepPlaceForm(StepAtForm):
    """Where a dragged step was dropped: just before the step `before`, or
    at the end of the plan when it is empty. With what the page showed
    (docs/adr/0125): the step's outline number (`number`) and the number of
    the step it was dropped before (`before_number`), empty when it was
    dropped at the end of its level. Both left out: it is placed as before."""

    before = forms.CharField(required=False, strip=True)
    before_number = forms.RegexField(
        OUTLINE_NUMBER,
        required=False,
        strip=True,
        error_messages={"invalid": SHOWN_BEFORE, "null_characters_not_allowed": SHOWN_BEFORE},
    )

    def clean_before(self):
        value = self.cleaned_data["before"]
        if "before" not in self.data:
            # Only an explicit empty value means the end: a request that says
            # nothing moves nothing.
            raise forms.ValidationError("Say which step it was dropped before (a step id, or empty for the end).")
        if not value:
            return None
        if not value.isascii() or not value.isdigit() or len(value) > 18:
            raise forms.ValidationError(f"Say which step it was dropped before (a step id), not {value!r}.")
        return int(value)

    def clean_before_number(self):
        # Sent empty means "at the end of its level"; left out, None: nothing to compare.
        return self.cleaned_data["before_number"] if "before_number" in self.data else None

    def clean(self):
        data = self.cleaned_data
        if self.errors:
            return data
        if (data.get("number") is None) != (data.get("before_number") is None):
            raise forms.ValidationError(SHOWN_IN_PART)
        if data.get("before") is None and data.get("before_number"):
            # Dropped at the end of the plan: before no step, so at the end of its level.
            raise forms.ValidationError(SHOWN_BEFORE)
        return data


KIND_ERRORS = {"invalid_choice": "Kind must be 'hard' or 'soft', not '%(value)s'.", "required": "Kind must be 'hard' or 'soft'."}


class PreferenceAddForm(forms.Form):
    title = RuleTextField(label="Title", max_chars=PREFERENCE_TITLE_MAX_CHARS, required=True)
    subtitle = RuleTextField(label="Subtitle", max_chars=PREFERENCE_SUBTITLE_MAX_CHARS, allow_empty=True)
    kind = forms.ChoiceField(choices=Preference.Kind.choices, required=False, error_messages=KIND_ERRORS)

    def clean_kind(self):
        return self.cleaned_data["kind"] or Preference.Kind.SOFT


class PreferenceEditForm(forms.Form):
    """Every field optional: what is not sent stays as it is. `was_*`: the
    preference as the person's page showed it (docs/adr/0125), all three or none."""

    title = RuleTextField(label="Title", max_chars=PREFERENCE_TITLE_MAX_CHARS)
    subtitle = RuleTextField(label="Subtitle", max_chars=PREFERENCE_SUBTITLE_MAX_CHARS, allow_empty=True)
    kind = forms.ChoiceField(choices=Preference.Kind.choices, required=False, error_messages=KIND_ERRORS)
    was_title = shown_field("title", PREFERENCE_TITLE_MAX_CHARS)
    was_subtitle = shown_field("detail", PREFERENCE_SUBTITLE_MAX_CHARS)
    was_kind = forms.ChoiceField(
        choices=Preference.Kind.choices,
        required=False,
        error_messages={"invalid_choice": "The kind your page showed must be 'hard' or 'soft', not '%(value)s'."},
    )

    def clean_kind(self):
        return self.cleaned_data["kind"] or None

    def clean(self):
        super().clean()
        data = self.cleaned_data
        shown = (data.pop("was_title", None), data.pop("was_subtitle", None), data.pop("was_kind", None) or None)
        if self.errors:
            return data
        if any(value is not None for value in shown) and None in shown:
            raise forms.ValidationError("Your page did not say how it showed the preference; reload the page and try again.")
        data["shown"] = None if shown[0] is None else shown
        subtitle, shown_subtitle = data.get("subtitle"), shown[1]
        if (
            shown_subtitle is not None
            and subtitle is not None
            and subtitle != shown_subtitle
            and subtitle == one_line(shown_subtitle)
        ):
            # The Detail field is one line: a detail of several comes back
            # without its line breaks, which nobody took out.
            data["subtitle"] = None
        return data


class PreferenceLockForm(forms.Form):
    locked = FlagField(question="to lock the preference")


VERSION_ERRORS = {
    "required": "The editor did not say which version it was editing; reload the page and try again.",
    "invalid": "The editor's version number is not valid; reload the page and try again.",
    "min_value": "The editor's version number is not valid; reload the page and try again.",
}


class VersionField(forms.IntegerField):
    """A JSON body may send any type: only a whole number or its digits is a
    version (a nested list would otherwise reach str() and may recurse)."""

    def to_python(self, value):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, str))):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


OLDER_CHANGES = "Older changes are asked for by the id of the oldest one shown (a whole number)."
NEWER_CHANGES = "Newer changes are asked for by the id of the newest one shown (a whole number, 0 for none)."


class PlanHistoryForm(forms.Form):
    """Which page of the plan's history: the newest (neither), the changes
    older than the entry `before` ("Show older changes"), or those newer
    than the entry `after` (what an open history does not show yet,
    docs/adr/0092); not both."""

    before = VersionField(
        required=False,
        min_value=1,
        max_value=2**63 - 1,
        error_messages={"invalid": OLDER_CHANGES, "min_value": OLDER_CHANGES, "max_value": OLDER_CHANGES},
    )
    after = VersionField(
        required=False,
        min_value=0,
        max_value=2**63 - 1,
        error_messages={"invalid": NEWER_CHANGES, "min_value": NEWER_CHANGES, "max_value": NEWER_CHANGES},
    )

    def clean(self):
        super().clean()
        data = self.cleaned_data
        if data.get("before") is not None and data.get("after") is not None:
            raise forms.ValidationError("Ask for older or for newer changes, not both at once.")
        return data


SPLICE_ERROR = "A changed part of the document is placed by whole numbers of characters, with a CRC-32 of the result."
SPLICE_ERRORS = {"invalid": SPLICE_ERROR, "min_value": SPLICE_ERROR, "max_value": SPLICE_ERROR}


SAVE_UNREADABLE = "That save could not be read; reload the page and try again."
SAVE_ERRORS = {"invalid": SAVE_UNREADABLE, "min_value": SAVE_UNREADABLE, "max_value": SAVE_UNREADABLE}


class SaveIdField(forms.CharField):
    """A page's id: text only (a JSON body may send any type, and str() of a
    nested list may recurse)."""

    def to_python(self, value):
        if value is not None and not isinstance(value, str):
            raise forms.ValidationError(SAVE_UNREADABLE, code="invalid")
        return super().to_python(value)


def _page_id_field() -> SaveIdField:
    """An editor page's id (docs/adr/0139): 16-64 URL-safe characters."""
    return SaveIdField(
        required=False,
        max_length=64,
        validators=[RegexValidator(r"\A[A-Za-z0-9_-]{16,64}\Z", message=SAVE_UNREADABLE)],
        error_messages={"invalid": SAVE_UNREADABLE, "max_length": SAVE_UNREADABLE},
    )


def _save_number_field() -> VersionField:
    """A save's number on its page (docs/adr/0139)."""
    return VersionField(required=False, min_value=1, max_value=2**31 - 1, error_messages=SAVE_ERRORS)


class DocumentSaveForm(forms.Form):
    """A save from the editor: based on `base_version`; title and/or content;
    `resolve` is the person's choice in the conflict view (empty: none)."""

    base_version = VersionField(min_value=0, error_messages=VERSION_ERRORS)
    title = RuleTextField(label="Document title", max_chars=DOCUMENT_TITLE_MAX_CHARS)
    content = RuleTextField(label="Document content", max_chars=settings.HAICO_DOCUMENT_MAX_CHARS, allow_empty=True, strip=False)
    resolve = forms.ChoiceField(
        required=False,
        choices=[("", ""), ("ours", "Keep mine"), ("theirs", "Keep theirs"), ("both", "Keep both")],
        error_messages={"invalid_choice": "Choose Keep mine, Keep theirs or Keep both."},
    )
    # The text `content` was edited from, when it is not base_version's own
    # (document_services.document_save, docs/adr/0040); usually absent.
    base_content = RuleTextField(
        label="The text the editor's content was based on",
        max_chars=settings.HAICO_DOCUMENT_MAX_CHARS,
        allow_empty=True,
        strip=False,
    )

    # A closing page's beacon sends the content as the span it changed in
    # base_version's text (workspace.text_splice, docs/adr/0040): all four
    # together, instead of `content`.
    content_kept_head = VersionField(
        required=False, min_value=0, max_value=settings.HAICO_DOCUMENT_MAX_CHARS, error_messages=SPLICE_ERRORS
    )
    content_kept_tail = VersionField(
        required=False, min_value=0, max_value=settings.HAICO_DOCUMENT_MAX_CHARS, error_messages=SPLICE_ERRORS
    )
    content_middle = RuleTextField(
        label="The changed part of the document",
        max_chars=settings.HAICO_DOCUMENT_MAX_CHARS,
        allow_empty=True,
        strip=False,
    )
    content_crc32 = VersionField(required=False, min_value=0, max_value=2**32 - 1, error_messages=SPLICE_ERRORS)

    SPLICE_FIELDS = ("content_kept_head", "content_kept_tail", "content_middle", "content_crc32")

    # Which save of which editor page this is (docs/adr/0139): the page's
    # id, the save's number, and the number of the page's first save still
    # unanswered. All three, or none (a script, a page from before them).
    save_page = _page_id_field()
    save_number = _save_number_field()
    save_unanswered_from = _save_number_field()
    PAGE_SAVE_FIELDS = ("save_page", "save_number", "save_unanswered_from")
    # The page the tab left, whose unanswered saves this page took over (a
    # reload): its id, its last save's number, its first unanswered one.
    # All three or none, and only beside this page's own three.
    save_left_page = _page_id_field()
    save_left_number = _save_number_field()
    save_left_unanswered_from = _save_number_field()
    LEFT_PAGE_FIELDS = ("save_left_page", "save_left_number", "save_left_unanswered_from")

    def clean(self):
        super().clean()
        data = self.cleaned_data
        data["content_splice"] = None
        if self.errors:
            return data
        splice = [data.get(name) for name in self.SPLICE_FIELDS]
        if any(part is not None for part in splice):
            if any(part is None for part in splice):
                raise forms.ValidationError("A change sent as a part of the document needs all four of its fields.")
            if data.get("content") is not None or data.get("base_content") is not None:
                raise forms.ValidationError("Send the document's content whole or as a changed part, not both.")
            data["content_splice"] = TextSplice(
                kept_head=data["content_kept_head"],
                kept_tail=data["content_kept_tail"],
                middle=data["content_middle"],
                crc32=data["content_crc32"],
            )
        if data.get("title") is None and data.get("content") is None and data["content_splice"] is None:
            raise forms.ValidationError("Nothing to save: send a title or content.")
        if data.get("base_content") is not None and data.get("content") is None:
            raise forms.ValidationError("The text the content was based on came without the content.")
        data["resolve"] = data.get("resolve") or None
        data["page_save"] = self._page_save(data)
        return data

    def _page_save(self, data) -> PageSave | None:
        parts = [data.get(name) or None for name in self.PAGE_SAVE_FIELDS]
        if not any(parts):
            if any(data.get(name) for name in self.LEFT_PAGE_FIELDS):
                raise forms.ValidationError(SAVE_UNREADABLE)
            return None
        page, number, unanswered_from = parts
        if page is None or number is None or unanswered_from is None or unanswered_from > number:
            raise forms.ValidationError(SAVE_UNREADABLE)
        return PageSave(page=page, number=number, unanswered_from=unanswered_from, took_over=self._left_page(data, page))

    def _left_page(self, data, page: str) -> PageSave | None:
        parts = [data.get(name) or None for name in self.LEFT_PAGE_FIELDS]
        if not any(parts):
            return None
        left, number, unanswered_from = parts
        if left is None or number is None or unanswered_from is None or unanswered_from > number or left == page:
            raise forms.ValidationError(SAVE_UNREADABLE)
        return PageSave(page=left, number=number, unanswered_from=unanswered_from)


class DocumentPreviewForm(forms.Form):
    """The editor's text as it is now, for the live preview (nothing is saved)."""

    content = RuleTextField(label="Document content", max_chars=settings.HAICO_DOCUMENT_MAX_CHARS, allow_empty=True, strip=False)


class DocumentRestoreForm(forms.Form):
    """ "Restore this version": which version, and the version the person's
    page was showing (so a concurrent write is merged, never overwritten)."""

    version = VersionField(
        min_value=0,
        error_messages={
            "required": "Say which version to restore.",
            "invalid": "The version to restore must be a number.",
            "min_value": "The version to restore must be a number.",
        },
    )
    base_version = VersionField(min_value=0, error_messages=VERSION_ERRORS)


class DocumentDiffForm(forms.Form):
    """The two versions to compare; either left out means the current one
    (`old` left out: the version before `new`)."""

    old = VersionField(
        required=False,
        min_value=0,
        error_messages={
            "invalid": "The versions to compare must be numbers.",
            "min_value": "The versions to compare must be numbers.",
        },
    )
    new = VersionField(
        required=False,
        min_value=0,
        error_messages={
            "invalid": "The versions to compare must be numbers.",
            "min_value": "The versions to compare must be numbers.",
        },
    )


class DocumentReviewForm(forms.Form):
    """Keep or Undo in the review of an agent turn's changes: which turn's
    review the page showed, and which hunk (left out: every one left)."""

    turn = VersionField(
        min_value=1,
        error_messages={
            "required": "Say which turn's changes this is about.",
            "invalid": "The turn must be a number.",
            "min_value": "The turn must be a number.",
        },
    )
    hunk = VersionField(
        required=False,
        min_value=0,
        error_messages={
            "invalid": "The change must be a number.",
            "min_value": "The change must be a number.",
        },
    )


class ArtifactChoiceForm(forms.Form):
    """`?artifact=<id>` picks an artifact for the centre panel; empty shows the document."""

    artifact = forms.IntegerField(
        required=False,
        min_value=1,
        error_messages={"invalid": "The artifact id must be a number.", "min_value": "The artifact id must be a number."},
    )


def first_error(form: forms.Form) -> str:
    for errors in form.errors.values():
        if errors:
            return str(errors[0])
    return "The request could not be read."

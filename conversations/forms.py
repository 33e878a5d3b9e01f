"""Input of the chat's per-message actions, validated at the edge."""

from django import forms
from django.conf import settings


class EditTurnForm(forms.Form):
    # Kept exactly as typed, like a chat message (turns.guard.clean_user_message).
    message = forms.CharField(strip=False, max_length=settings.HAICO_MESSAGE_MAX_CHARS)

    def clean_message(self):
        message = self.cleaned_data["message"]
        if not message.strip():
            raise forms.ValidationError("Write the message to send.")
        return message

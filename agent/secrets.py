"""API keys kept out of logs and error details (docs/adr/0062).

The keys of the chat models this process built are remembered here, and
blanked out of whatever text a log line or an operator's detail carries: a
provider may echo the key it was sent in an error body, and a traceback
may quote it. Light on imports: the logging configuration loads it before
the apps."""

from __future__ import annotations

import logging

REDACTED = "[API key]"
# What local servers are sent when no key is set (agent.model); not a secret.
NOT_A_SECRET = frozenset({"", "not-needed"})
_secrets: set[str] = set()


def remember_secret(secret: str) -> None:
    if secret and len(secret) >= 8 and secret not in NOT_A_SECRET:
        _secrets.add(secret)


def redact(text: str) -> str:
    """`text` with every API key this process uses blanked out."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


class RedactSecrets(logging.Filter):
    """A logging filter (haico_site.settings LOGGING) that blanks the API keys
    in use out of every record's message and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:
            return True  # a broken record is the handler's to report
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True

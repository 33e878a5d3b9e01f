"""What a person is told when a turn fails."""

import openai
import psycopg
from django.db import InterfaceError, OperationalError
from langgraph.errors import GraphRecursionError

from agent.model import ModelNotConfigured, ModelStreamSilent
from workspace.errors import UserFacingError

RETRY = " Your message is saved; send it again to retry."


def safe_error_message(exc: BaseException) -> str:
    """A sentence the person can act on; never a traceback or a provider's raw text."""
    if isinstance(exc, ModelNotConfigured | UserFacingError):
        return exc.message
    if database_unreachable(exc):
        return "The database did not answer while the assistant was working." + RETRY
    if isinstance(exc, GraphRecursionError):
        return "The assistant took too many steps without finishing." + RETRY
    if isinstance(exc, openai.APITimeoutError | ModelStreamSilent):
        return "The model did not answer in time." + RETRY
    if isinstance(exc, openai.APIConnectionError):
        return "The model server could not be reached." + RETRY
    if isinstance(exc, openai.RateLimitError):
        return "The model provider is limiting requests right now." + RETRY
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return "The model server refused the API key; check OPENAI_API_KEY, or the provider's key in the admin's model catalogue."
    if isinstance(exc, openai.NotFoundError):
        return "The model server does not offer this model; check HAICO_MODEL / HAICO_MODELS, or the admin's model catalogue."
    if isinstance(exc, openai.APIStatusError):
        return f"The model server answered with an error (HTTP {exc.status_code})." + RETRY
    return "Something went wrong while the assistant was working." + RETRY


def is_provider_failure(exc: BaseException) -> bool:
    """A failure on the model provider's side (a timeout, a refusal, an
    overload): an expected event the person is told about, worth a line in
    the log but not a traceback, which would only show our own call stack."""
    return isinstance(exc, openai.APIError | ModelStreamSilent)


def database_unreachable(exc: BaseException) -> bool:
    """A database that did not answer (a lost connection after a restart or
    a failover), from Django or from the checkpointer's own psycopg pool,
    however it was wrapped."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OperationalError | InterfaceError | psycopg.OperationalError | psycopg.InterfaceError):
            return True
        exc = exc.__cause__ or exc.__context__
    return False

"""What a person is told when a turn fails."""

import openai
import psycopg
from django.db import InterfaceError, OperationalError
from langgraph.errors import GraphRecursionError

from agent.catalogue import ModelChoice
from agent.model import ModelNotConfigured, ModelStreamSilent
from workspace.errors import UserFacingError

RETRY = " Your message is saved; send it again to retry."
ANOTHER_MODEL = " You can also choose another model in the Model selector."


def safe_error_message(exc: BaseException, *, model: ModelChoice | None = None, others: bool = False) -> str:
    """A sentence the person can act on; never a traceback or a provider's
    raw text. A provider's failure names the model that failed as the
    selector shows it (among several providers, "the model" says nothing)
    and, when `others` (another model is offered to the person), suggests
    choosing another. What the operator must fix (a key, a setting) is for
    the server's log (operator_detail), not for a person without the admin."""
    if isinstance(exc, ModelNotConfigured | UserFacingError):
        return exc.message
    if database_unreachable(exc):
        return "The database did not answer while the assistant was working." + RETRY
    if isinstance(exc, GraphRecursionError):
        return "The assistant took too many steps without finishing." + RETRY
    named = f"“{model.label}”" if model is not None else "the model"
    another = ANOTHER_MODEL if others else ""
    if isinstance(exc, openai.APITimeoutError | ModelStreamSilent):
        return f"{named[:1].upper()}{named[1:]} did not answer in time." + RETRY + another
    if isinstance(exc, openai.APIConnectionError):
        return f"The server of {named} could not be reached." + RETRY + another
    if isinstance(exc, openai.RateLimitError):
        return f"The provider of {named} is limiting requests right now." + RETRY + another
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return f"The provider of {named} refused the API key it was given; whoever runs this site needs to check it." + another
    if isinstance(exc, openai.NotFoundError):
        return f"The provider of {named} does not offer it; whoever runs this site needs to check its name." + another
    if isinstance(exc, openai.APIStatusError):
        return f"The provider of {named} answered with an error (HTTP {exc.status_code})." + RETRY + another
    return "Something went wrong while the assistant was working." + RETRY


def operator_detail(exc: BaseException, model: ModelChoice | None) -> str:
    """For the server's log: which provider and model failed and, for a
    refused key or an unknown model, which setting to check."""
    where = f"model {model.model!r} at provider {model.provider_name!r}" if model is not None else "no model"
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return f"{where}; check its API key: OPENAI_API_KEY for the environment's provider, else the provider's key in the admin's model catalogue"
    if isinstance(exc, openai.NotFoundError):
        return f"{where}; check the model name: HAICO_MODEL / HAICO_MODELS for the environment's provider, else the admin's model catalogue"
    return where


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

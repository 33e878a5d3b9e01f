"""Which models a person may use, and how each is reached (docs/adr/0062).

Two sources, one list:

- the built-in provider from the environment (OPENAI_BASE_URL,
  OPENAI_API_KEY, HAICO_MODEL, HAICO_MODELS): offered to everyone, as
  before the catalogue existed;
- the catalogue staff manage in the admin (agent.models): providers, the
  models each offers, offered to everyone or to chosen people.

A model is named by a key that says which provider it is at:
`env:<model name>` for the environment's, `catalogue:<id>` for a catalogue
model (its row id, so renaming a label or a provider keeps a thread's
choice). Thread.chat_model and Turn.model_name hold keys. A bare model name
(stored before keys existed, or in an older archive) still means the
environment's model of that name.

The person's default is the site's default model (the catalogue model
marked default, else HAICO_MODEL) when they may use it, else the first
model they may use. A key no longer offered to the person (removed,
disabled, or taken from them) falls back to that default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Q

ENV_PREFIX = "env:"
CATALOGUE_PREFIX = "catalogue:"
ENV_PROVIDER_NAME = "environment"


@dataclass(frozen=True)
class ModelChoice:
    """One model a person may choose, with what it takes to call it.

    `version` changes whenever the provider's settings do, so the compiled
    agent cached for it (agent.builder) is rebuilt; the key is never in a
    repr or a log line."""

    key: str
    label: str
    model: str  # the name the provider knows
    provider_name: str
    provider_id: int | None  # None: the environment's provider
    base_url: str
    api_key: str = field(repr=False, compare=False)
    version: str = ""

    @property
    def cache_key(self) -> tuple:
        return (self.provider_id, self.version, self.model)

    def __str__(self):
        return self.label


def _env_names() -> list[str]:
    """The environment's models, HAICO_MODEL first; none without an endpoint
    (a model name alone would send requests to api.openai.com without a key)."""
    if not (getattr(settings, "OPENAI_API_KEY", "") or getattr(settings, "OPENAI_BASE_URL", "")):
        return []
    names = [m for m in getattr(settings, "HAICO_MODELS", []) or [] if m]
    default = getattr(settings, "HAICO_MODEL", "") or ""
    if default:
        names = [default, *[n for n in names if n != default]]
    return list(dict.fromkeys(names))


def env_choices() -> list[ModelChoice]:
    base_url, api_key = settings.OPENAI_BASE_URL or "", settings.OPENAI_API_KEY or ""
    return [
        ModelChoice(
            key=ENV_PREFIX + name,
            label=name,
            model=name,
            provider_name=ENV_PROVIDER_NAME,
            provider_id=None,
            base_url=base_url,
            api_key=api_key,
        )
        for name in _env_names()
    ]


def _catalogue_choice(row) -> ModelChoice:
    provider = row.provider
    return ModelChoice(
        key=f"{CATALOGUE_PREFIX}{row.pk}",
        label=f"{row.label or row.name} ({provider.name})",
        model=row.name,
        provider_name=provider.name,
        provider_id=provider.pk,
        base_url=provider.base_url,
        api_key=provider.api_key,
        version=provider.updated_at.isoformat() if provider.updated_at else "",
    )


def _catalogue_rows(user):
    from .models import CatalogueModel

    rows = CatalogueModel.objects.filter(enabled=True, provider__enabled=True).select_related("provider")
    if user is None:
        return list(rows.filter(everyone=True))
    offered = Q(everyone=True) | Q(people__pk=user.pk)
    return list(rows.filter(offered).distinct())


def choices_for(user) -> list[ModelChoice]:
    """The models `user` may use, their default first; [] when none is
    configured. One query (the catalogue); the environment's from settings."""
    rows = _catalogue_rows(user)
    default_row = next((row for row in rows if row.is_default), None)
    catalogue = [_catalogue_choice(row) for row in sorted(rows, key=lambda r: (r.provider.name, r.label or r.name, r.pk))]
    env = env_choices()
    if default_row is not None:
        default = f"{CATALOGUE_PREFIX}{default_row.pk}"
        first = [c for c in catalogue if c.key == default]
        return first + env + [c for c in catalogue if c.key != default]
    return env + catalogue


def normal_key(key) -> str | None:
    """The key a stored or sent value names: itself, or for a bare model name
    the environment's model of that name. None for what names nothing."""
    if not isinstance(key, str) or not key or len(key) > 300:
        return None
    if key.startswith((ENV_PREFIX, CATALOGUE_PREFIX)):
        return key
    return ENV_PREFIX + key


def find(choices: list[ModelChoice], key) -> ModelChoice | None:
    """The choice among `choices` that `key` names, or None."""
    wanted = normal_key(key)
    return next((choice for choice in choices if choice.key == wanted), None)


def once_offered_label(user, key: str) -> str | None:
    """The label the model `key` names had in `user`'s Model selector,
    whether or not staff have since disabled it or its provider; None when
    its catalogue row is gone or was never offered to them (a hand-made key
    learns nothing about a model offered only to other people). An
    environment model's label is its name."""
    from .models import CatalogueModel

    if key.startswith(ENV_PREFIX):
        return key.removeprefix(ENV_PREFIX)
    pk = _catalogue_id(key)
    if pk is None:
        return None
    offered = Q(everyone=True) | Q(people__pk=getattr(user, "pk", None))
    row = CatalogueModel.objects.filter(offered, pk=pk).select_related("provider").first()
    return _catalogue_choice(row).label if row is not None else None


def not_offered_message(user, key, choices: list[ModelChoice], *, then: str) -> str:
    """What a person is told when the model they sent or chose is not among
    `choices`: a catalogue model staff took away since their page loaded is
    named as the selector showed it, never by its internal key; `then` says
    what happens next. An environment's model name (few, and its own label)
    is refused with the list of what is offered."""
    wanted = normal_key(key)
    if wanted is not None and wanted.startswith(CATALOGUE_PREFIX):
        label = once_offered_label(user, wanted)
        named = f"“{label}” is no longer offered." if label else "The model you chose is no longer offered."
        return f"{named} {then}"
    offered = f" Choose one of: {', '.join(c.label for c in choices)}." if choices else " No model is configured."
    return f"Unknown model “{key}”.{offered}"


def catalogue_names(keys) -> list[dict]:
    """What a `catalogue:<id>` key names, in words another server can look
    up (its row ids are its own): {"key", "provider", "model"} for each of
    `keys` whose row exists. One query."""
    from .models import CatalogueModel

    ids = {pk for pk in map(_catalogue_id, keys) if pk is not None}
    rows = CatalogueModel.objects.filter(pk__in=ids).select_related("provider").order_by("pk")
    return [{"key": f"{CATALOGUE_PREFIX}{row.pk}", "provider": row.provider.name, "model": row.name} for row in rows]


def catalogue_keys_named(names: list[dict]) -> dict[str, str]:
    """For keys another server exported with what they named
    (catalogue_names): this server's key for the model of that name at the
    provider of that name, or "" when it has none (the default applies, as
    for any model not offered). One query."""
    from .models import CatalogueModel

    wanted = Q(pk__in=[])
    for named in names:
        wanted |= Q(provider__name=named["provider"], name=named["model"])
    here = {
        (provider, name): pk
        for pk, provider, name in CatalogueModel.objects.filter(wanted).values_list("pk", "provider__name", "name")
    }
    mapped = {}
    for named in names:
        pk = here.get((named["provider"], named["model"]))
        mapped[named["key"]] = f"{CATALOGUE_PREFIX}{pk}" if pk is not None else ""
    return mapped


def _catalogue_id(key) -> int | None:
    if not isinstance(key, str) or not key.startswith(CATALOGUE_PREFIX):
        return None
    digits = key.removeprefix(CATALOGUE_PREFIX)
    return int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 18 else None


def choice_for(user, key=None) -> ModelChoice | None:
    """The model a turn of `user` runs with: `key` while they may use it,
    else their default; None when no model is configured for them."""
    choices = choices_for(user)
    return find(choices, key) or (choices[0] if choices else None)

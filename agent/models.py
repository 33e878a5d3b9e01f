"""The model catalogue staff manage in the admin (docs/adr/0062): the
OpenAI-compatible providers, the models each offers and who may use them.

The environment's provider (OPENAI_BASE_URL, OPENAI_API_KEY, HAICO_MODEL,
HAICO_MODELS) is not a row: it is the built-in one, offered to everyone
(agent.catalogue). A provider's API key is stored as given, in this
table: the database is the secret store (docs/adr/0062). It is never
rendered back (the admin shows only whether one is set), never in a repr,
a log line or an archive."""

from django.conf import settings
from django.db import models
from django.db.models import Q

PROVIDER_NAME_MAX_CHARS = 100
MODEL_NAME_MAX_CHARS = 200


class Provider(models.Model):
    name = models.CharField(max_length=PROVIDER_NAME_MAX_CHARS, unique=True)
    base_url = models.URLField(
        max_length=500, help_text="The OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 or http://localhost:11434/v1."
    )
    api_key = models.TextField(blank=True, default="")
    enabled = models.BooleanField(default=True, help_text="Off: none of its models is offered.")
    created_at = models.DateTimeField(auto_now_add=True)
    # A compiled agent is cached per provider version (agent.builder): a
    # changed URL or key takes effect on the next turn.
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"<Provider {self.pk}: {self.name}>"

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key)


class CatalogueModel(models.Model):
    """One model a provider offers: the name sent to the provider, the label
    people see in the Model selector, whether it is offered, and to whom
    (everyone, or only `people`). At most one is the site's default."""

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="models")
    name = models.CharField(max_length=MODEL_NAME_MAX_CHARS, help_text="The model name the provider knows, e.g. gpt-4o-mini.")
    label = models.CharField(
        max_length=MODEL_NAME_MAX_CHARS, blank=True, help_text="Shown in the Model selector; blank: the name."
    )
    enabled = models.BooleanField(default=True)
    everyone = models.BooleanField(default=True, help_text="Offered to everyone; off: only to the people chosen below.")
    people = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="catalogue_models")
    is_default = models.BooleanField(
        default=False, help_text="The site's default model (one at most): the Model selector's first choice."
    )

    class Meta:
        ordering = ["provider__name", "name"]
        verbose_name = "model"
        constraints = [
            models.UniqueConstraint(fields=["provider", "name"], name="catalogue_model_unique_per_provider"),
            models.UniqueConstraint(fields=["is_default"], condition=Q(is_default=True), name="catalogue_one_default_model"),
        ]

    def __str__(self):
        return f"{self.label or self.name} ({self.provider.name})"

    def __repr__(self):
        return f"<CatalogueModel {self.pk}: {self.provider_id}/{self.name}>"

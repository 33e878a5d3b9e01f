"""Which models a person may use (agent.catalogue): the environment's
provider for everyone, the catalogue's models for everyone or for chosen
people, the site's default first; keys that name the provider; a model no
longer offered falls back to the person's default; and one compiled agent
per provider, provider version and model (agent.builder)."""

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import AgentProvider
from agent.catalogue import ModelChoice, choice_for, choices_for, find, normal_key
from agent.models import CatalogueModel, Provider
from tests.support.fake_model import ScriptedChatModel

pytestmark = pytest.mark.django_db


@pytest.fixture
def env_models(settings):
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "http://127.0.0.1:9/v1", ""
    settings.HAICO_MODEL, settings.HAICO_MODELS = "local-a", ["local-b", "local-a"]
    return settings


@pytest.fixture
def no_env_model(settings):
    settings.OPENAI_BASE_URL = settings.OPENAI_API_KEY = settings.HAICO_MODEL = ""
    settings.HAICO_MODELS = []
    return settings


@pytest.fixture
def catalogue(owner):
    openai = Provider.objects.create(name="OpenAI", base_url="https://api.example.com/v1", api_key="sk-openai-secret-1")
    lab = Provider.objects.create(name="Lab", base_url="http://lab.example.com/v1", api_key="")
    rows = {
        "mini": CatalogueModel.objects.create(provider=openai, name="gpt-mini", label="GPT mini"),
        "big": CatalogueModel.objects.create(provider=openai, name="gpt-big", everyone=False),
        # The same model name at another provider is another model.
        "lab_mini": CatalogueModel.objects.create(provider=lab, name="gpt-mini"),
        "off": CatalogueModel.objects.create(provider=lab, name="retired", enabled=False),
    }
    rows["big"].people.add(owner)
    return rows


def _keys(choices):
    return [choice.key for choice in choices]


def test_the_environment_s_models_are_offered_to_everyone_default_first(owner, env_models):
    choices = choices_for(owner)
    assert _keys(choices) == ["env:local-a", "env:local-b"]
    assert [c.label for c in choices] == ["local-a", "local-b"]
    assert all(c.provider_id is None and c.base_url == "http://127.0.0.1:9/v1" for c in choices)


def test_catalogue_models_are_offered_to_everyone_or_to_the_people_chosen(owner, other_user, catalogue, env_models):
    mini, big, lab_mini = (f"catalogue:{catalogue[n].pk}" for n in ("mini", "big", "lab_mini"))
    assert _keys(choices_for(owner)) == ["env:local-a", "env:local-b", lab_mini, mini, big]
    assert _keys(choices_for(other_user)) == ["env:local-a", "env:local-b", lab_mini, mini]
    labels = {c.key: c.label for c in choices_for(owner)}
    assert labels[mini] == "GPT mini (OpenAI)" and labels[lab_mini] == "gpt-mini (Lab)"
    chosen = find(choices_for(owner), big)
    assert (chosen.model, chosen.provider_name, chosen.base_url) == ("gpt-big", "OpenAI", "https://api.example.com/v1")


def test_a_disabled_model_or_provider_is_offered_to_nobody(owner, catalogue, no_env_model):
    assert f"catalogue:{catalogue['off'].pk}" not in _keys(choices_for(owner))
    Provider.objects.filter(name="OpenAI").update(enabled=False)
    assert _keys(choices_for(owner)) == [f"catalogue:{catalogue['lab_mini'].pk}"]


def test_the_site_default_comes_first_for_whoever_may_use_it(owner, other_user, catalogue, env_models):
    CatalogueModel.objects.filter(pk=catalogue["big"].pk).update(is_default=True)
    assert _keys(choices_for(owner))[0] == f"catalogue:{catalogue['big'].pk}"
    # Not theirs to use: their default is the first they may use.
    assert _keys(choices_for(other_user))[0] == "env:local-a"
    assert choice_for(other_user).key == "env:local-a"


def test_a_model_no_longer_offered_falls_back_to_the_person_s_default(owner, other_user, catalogue, env_models):
    big = f"catalogue:{catalogue['big'].pk}"
    assert choice_for(owner, big).key == big
    assert choice_for(other_user, big).key == "env:local-a"  # never theirs
    catalogue["big"].people.remove(owner)
    assert choice_for(owner, big).key == "env:local-a"  # taken from them
    CatalogueModel.objects.filter(pk=catalogue["mini"].pk).delete()
    assert choice_for(owner, f"catalogue:{catalogue['mini'].pk}").key == "env:local-a"  # removed
    assert choice_for(owner, "env:gone").key == "env:local-a"


def test_a_bare_model_name_stored_before_keys_means_the_environment_s(owner, env_models):
    assert choice_for(owner, "local-b").key == "env:local-b"
    assert normal_key("llama3.1:8b") == "env:llama3.1:8b"
    for nothing in (None, "", 5, ["env:local-b"], "x" * 301):
        assert normal_key(nothing) is None


def test_nothing_configured_offers_nothing(owner, no_env_model):
    assert choices_for(owner) == [] and choice_for(owner, "env:x") is None


def test_the_key_of_a_provider_is_in_no_repr(owner, catalogue, no_env_model):
    choice = find(choices_for(owner), f"catalogue:{catalogue['mini'].pk}")
    assert choice.api_key == "sk-openai-secret-1"
    for text in (
        repr(choice),
        str(choice),
        repr(catalogue["mini"].provider),
        str(catalogue["mini"].provider),
        repr(catalogue["mini"]),
        str(catalogue["mini"]),
    ):
        assert "sk-openai-secret-1" not in text


# --- one compiled agent per provider, version and model (agent.builder) ---------------------


def test_the_compiled_agent_is_kept_per_provider_and_rebuilt_when_the_provider_changes(owner, catalogue, no_env_model):
    built = []

    def factory(model):
        built.append(model)
        return ScriptedChatModel(script=[])

    agents, saver = AgentProvider(model_factory=factory), InMemorySaver()
    mini = find(choices_for(owner), f"catalogue:{catalogue['mini'].pk}")
    lab_mini = find(choices_for(owner), f"catalogue:{catalogue['lab_mini'].pk}")
    first = agents.graph(model=mini, checkpointer=saver)
    assert agents.graph(model=mini, checkpointer=saver) is first
    # The same model name at another provider is another agent.
    assert agents.graph(model=lab_mini, checkpointer=saver) is not first
    assert [m.provider_name for m in built] == ["OpenAI", "Lab"]

    # Staff change the provider's key: its next turn gets a new agent, the old one is dropped.
    provider = Provider.objects.get(name="OpenAI")
    provider.api_key = "sk-openai-secret-2"
    provider.save()
    changed = find(choices_for(owner), f"catalogue:{catalogue['mini'].pk}")
    assert changed.version != mini.version
    assert agents.graph(model=changed, checkpointer=saver) is not first
    assert built[-1].api_key == "sk-openai-secret-2"
    assert len(agents._graphs) == 2


def test_get_chat_model_uses_the_choice_s_provider(owner, catalogue, no_env_model):
    from agent.model import get_chat_model

    choice = find(choices_for(owner), f"catalogue:{catalogue['mini'].pk}")
    llm = get_chat_model(choice)
    assert llm.model_name == "gpt-mini" and llm.openai_api_base == "https://api.example.com/v1"
    assert llm.openai_api_key.get_secret_value() == "sk-openai-secret-1"
    assert "sk-openai-secret-1" not in repr(llm)
    assert isinstance(choice, ModelChoice)

"""The model catalogue in the admin (agent.admin): staff add providers and
their models, choose who may use each and the site's default; a
provider's API key is write-only: never rendered back, kept when the field
is left blank, shown only as "set" / "not set"."""

import pytest

from agent.models import CatalogueModel, Provider

pytestmark = pytest.mark.django_db

KEY = "sk-admin-test-9f8e7d6c5b4a"


def _provider_form(**fields):
    data = {
        "name": "OpenAI",
        "base_url": "https://api.example.com/v1",
        "enabled": "on",
        "new_api_key": "",
        "models-TOTAL_FORMS": "0",
        "models-INITIAL_FORMS": "0",
        "models-MIN_NUM_FORMS": "0",
        "models-MAX_NUM_FORMS": "1000",
    }
    return {**data, **fields}


def test_staff_add_a_provider_with_a_key_and_a_model_and_the_key_is_never_shown(staff_client):
    response = staff_client.post(
        "/admin/agent/provider/add/",
        _provider_form(
            new_api_key=KEY,
            **{
                "models-TOTAL_FORMS": "1",
                "models-0-name": "gpt-mini",
                "models-0-label": "GPT mini",
                "models-0-enabled": "on",
                "models-0-everyone": "on",
            },
        ),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    provider = Provider.objects.get()
    assert provider.api_key == KEY and provider.models.get().name == "gpt-mini"
    for path in (
        "/admin/agent/provider/",
        f"/admin/agent/provider/{provider.pk}/change/",
        "/admin/agent/cataloguemodel/",
        f"/admin/agent/cataloguemodel/{provider.models.get().pk}/change/",
        f"/admin/agent/provider/{provider.pk}/history/",
        f"/admin/agent/provider/{provider.pk}/delete/",
        "/admin/",
        "/admin/agent/",
    ):
        page = staff_client.get(path).content.decode()
        assert KEY not in page and KEY[:12] not in page, path
    change = staff_client.get(f"/admin/agent/provider/{provider.pk}/change/").content.decode()
    assert 'type="password" name="new_api_key"' in change and 'value="sk-' not in change
    assert '<div class="readonly">set</div>' in change
    assert ">set<" in staff_client.get("/admin/agent/provider/").content.decode()


def test_a_blank_key_field_keeps_the_stored_key_and_remove_clears_it(staff_client):
    provider = Provider.objects.create(name="OpenAI", base_url="https://api.example.com/v1", api_key=KEY)
    response = staff_client.post(f"/admin/agent/provider/{provider.pk}/change/", _provider_form(name="OpenAI EU"))
    assert response.status_code == 302
    provider.refresh_from_db()
    assert (provider.name, provider.api_key) == ("OpenAI EU", KEY)
    staff_client.post(f"/admin/agent/provider/{provider.pk}/change/", _provider_form(new_api_key="sk-new-key-123456"))
    provider.refresh_from_db()
    assert provider.api_key == "sk-new-key-123456"
    staff_client.post(f"/admin/agent/provider/{provider.pk}/change/", _provider_form(remove_api_key="on"))
    provider.refresh_from_db()
    assert provider.api_key == ""
    assert (
        '<div class="readonly">not set</div>' in staff_client.get(f"/admin/agent/provider/{provider.pk}/change/").content.decode()
    )


def test_a_new_key_and_remove_together_are_refused(staff_client):
    provider = Provider.objects.create(name="OpenAI", base_url="https://api.example.com/v1", api_key=KEY)
    response = staff_client.post(
        f"/admin/agent/provider/{provider.pk}/change/", _provider_form(new_api_key="sk-other-123456", remove_api_key="on")
    )
    assert response.status_code == 200 and "Either type a new key or remove the stored one" in response.content.decode()
    assert KEY not in response.content.decode() and "sk-other-123456" not in response.content.decode()
    provider.refresh_from_db()
    assert provider.api_key == KEY


def test_a_model_is_offered_to_chosen_people_and_one_is_the_site_default(staff_client, owner):
    provider = Provider.objects.create(name="Lab", base_url="http://lab.example.com/v1")
    first = CatalogueModel.objects.create(provider=provider, name="a")
    second = CatalogueModel.objects.create(provider=provider, name="b")
    response = staff_client.post(
        f"/admin/agent/cataloguemodel/{second.pk}/change/",
        {
            "provider": provider.pk,
            "name": "b",
            "label": "Model B",
            "enabled": "on",
            "people": [owner.pk],
        },
    )
    assert response.status_code == 302
    second.refresh_from_db()
    assert not second.everyone and list(second.people.all()) == [owner]
    staff_client.post("/admin/agent/cataloguemodel/", {"action": "make_default", "_selected_action": [first.pk]})
    staff_client.post("/admin/agent/cataloguemodel/", {"action": "make_default", "_selected_action": [second.pk]})
    assert list(CatalogueModel.objects.filter(is_default=True)) == [second]
    # Two at once is not one default.
    response = staff_client.post(
        "/admin/agent/cataloguemodel/", {"action": "make_default", "_selected_action": [first.pk, second.pk]}, follow=True
    )
    assert "Choose exactly one model" in response.content.decode()
    # The form refuses a second default rather than failing on the constraint.
    refused = staff_client.post(
        f"/admin/agent/cataloguemodel/{first.pk}/change/",
        {
            "provider": provider.pk,
            "name": "a",
            "enabled": "on",
            "everyone": "on",
            "is_default": "on",
        },
    )
    assert refused.status_code == 200 and "is the default" in refused.content.decode()


def test_the_admin_index_names_the_catalogue(staff_client):
    page = staff_client.get("/admin/").content.decode()
    assert "Models and providers" in page


def _providers(n, start=0):
    for p in range(start, start + n):
        provider = Provider.objects.create(name=f"Prov{p:02d}", base_url=f"http://127.0.0.1:9/v{p}", api_key=f"sk-{p}")
        for m in range(4):
            CatalogueModel.objects.create(provider=provider, name=f"model-{p}-{m}", label=f"Model {p}.{m}")


def test_the_provider_list_counts_each_providers_models_in_the_same_queries_at_1_and_10_providers(staff_client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def listed():
        with CaptureQueriesContext(connection) as queries:
            html = staff_client.get("/admin/agent/provider/").content.decode()
        return html, len(queries)

    _providers(1)
    _, one = listed()
    Provider.objects.create(name="Empty", base_url="http://127.0.0.1:9/none")
    _providers(9, start=1)
    html, ten = listed()
    assert ten == one, (one, ten)
    assert html.count('<td class="field-model_count">4</td>') == 10 and '<td class="field-model_count">0</td>' in html

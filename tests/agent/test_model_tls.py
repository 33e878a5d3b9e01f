"""The model client over HTTPS: a team that self-hosts its provider behind
its own certificate authority names it in SSL_CERT_FILE, and the real
ChatOpenAI then reaches it; a certificate nobody vouched for is refused.
The clients of every chat model share one TLS context (docs/adr/0163)."""

import ssl

import openai
import pytest
from langchain_core.messages import HumanMessage

from agent.model import get_chat_model, tls_context
from tests.support.fake_model import Reply
from tests.support.openai_server import OpenAICompatibleServer
from tests.support.tls import openssl_missing, self_signed_certificate

pytestmark = pytest.mark.skipif(bool(openssl_missing()), reason="openssl is not installed")


@pytest.fixture
def fresh_tls_context():
    """The process's context, made again from this test's environment and
    dropped after it, so no other test sees the certificate it trusted."""
    tls_context.cache_clear()
    yield
    tls_context.cache_clear()


@pytest.fixture
def provider_over_https(tmp_path, settings):
    cert, key = self_signed_certificate(tmp_path)
    with OpenAICompatibleServer(models=["in-house"], tls=(cert, key)) as server:
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "team-key"
        settings.HAICO_MODEL = "in-house"
        settings.HAICO_MODELS = []
        settings.HAICO_MODEL_MAX_RETRIES = 0
        yield server, cert


async def test_a_provider_whose_authority_is_named_in_ssl_cert_file_is_reached(
    provider_over_https, fresh_tls_context, monkeypatch
):
    server, cert = provider_over_https
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server.script([Reply(text="Answered over TLS."), Reply(text="And again, for a second model.")])

    first, second = get_chat_model(), get_chat_model()
    assert (await first.ainvoke([HumanMessage("Hello")])).content == "Answered over TLS."
    assert (await second.ainvoke([HumanMessage("Hello")])).content == "And again, for a second model."
    assert server.base_url.startswith("https://")
    assert len(server.requests) == 2


async def test_a_certificate_nobody_vouched_for_is_refused(provider_over_https, fresh_tls_context, monkeypatch):
    server, _cert = provider_over_https
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    server.script([Reply(text="Nobody should read this.")])

    with pytest.raises(openai.APIConnectionError):
        await get_chat_model().ainvoke([HumanMessage("Hello")])
    assert server.requests == []


def test_the_certificate_bundle_is_read_once_for_every_client_of_every_chat_model(
    provider_over_https, fresh_tls_context, monkeypatch
):
    reads = []
    load = ssl.SSLContext.load_verify_locations

    def counted(context, *args, **kwargs):
        reads.append(args or kwargs)
        return load(context, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    get_chat_model(), get_chat_model()
    assert len(reads) == 1
    assert tls_context().check_hostname is True
    assert tls_context().verify_mode == ssl.CERT_REQUIRED

"""Two people, two servers, a long document and a crash, all at once, in
Chromium against PostgreSQL and Redis: the sizes and faults of real team
use met together, where each alone is tested elsewhere.

Ada (the owner, on server A) and Bea (an editor, on server B) type in
different paragraphs of a 50 000-character report. Server B is killed
(SIGKILL) while Bea types on; Ada saves meanwhile. Once B is back on its
address, Bea's words typed while it was down reach the server through the
page's own retry, merged with Ada's. Then PostgreSQL closes every
connection of both servers (a failover) and both type on. Nobody's words
are lost: both pages show every addition, the database holds them, and a
reload of either page shows them again."""

import re

import psycopg
import pytest
from playwright.sync_api import expect

from tests.support.postgres import end_backends

from .helpers import (
    document_status,
    document_text,
    long_document,
    new_thread_for,
    save_through_service,
    thread_id_from,
    type_after,
    wait_for_socket,
)
from .test_sharing import _person_on, _share

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.redis]

DOCUMENT_CHARS = 50_000
# A 50 000-character save and push on a busy two-core machine, twice over.
LONG_WAIT_MS = 30_000


def _stored(database_url: str, thread_id: str) -> str:
    with psycopg.connect(database_url, connect_timeout=5) as conn:
        return conn.execute("SELECT content FROM workspace_document WHERE thread_id = %s", (thread_id,)).fetchone()[0]


def _anchor(n: int) -> str:
    return f"Paragraph {n}.1 of the report says what was found in part {n}."


def test_two_people_on_two_servers_keep_every_word_of_a_long_document_through_a_server_crash(
    new_page, start_haico_server, migrated_postgres_database_url, redis_url
):
    env = {"REDIS_URL": redis_url}
    server_a = start_haico_server(env, database_url=migrated_postgres_database_url)
    server_b = start_haico_server(env, database_url=migrated_postgres_database_url)
    ada = new_page()
    url_a = new_thread_for(ada, server_a.url, "ada")
    thread_id = thread_id_from(url_a)
    text = long_document(DOCUMENT_CHARS)
    last = max(int(n) for n in re.findall(r"Paragraph (\d+)\.1 of the report says what was found in part \1\.", text))
    save_through_service(server_a, thread_id, text)
    server_a.create_user("bea")
    ada.reload()
    expect(document_text(ada)).to_have_value(text, timeout=LONG_WAIT_MS)
    _share(ada, "bea", "Editor")
    ada.get_by_role("dialog", name="Share").get_by_role("button", name="Close").click()
    wait_for_socket(ada)
    bea = _person_on(new_page, server_b, url_a.replace(server_a.url, server_b.url), "bea")
    expect(document_text(bea)).to_have_value(text, timeout=LONG_WAIT_MS)

    # Both type at once, Ada near the top, Bea near the end; each sees the other's words.
    type_after(ada, _anchor(2), " Ada's first words.")
    type_after(bea, _anchor(last), " Bea's first words.")
    for page, other in ((ada, "Bea's first words."), (bea, "Ada's first words.")):
        expect(document_text(page)).to_have_value(re.compile(re.escape(other)), timeout=LONG_WAIT_MS)
        expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=LONG_WAIT_MS)

    # Bea's server dies; she goes on typing. Her words cannot be saved yet.
    server_b.kill()
    type_after(bea, "Bea's first words.", " Bea's words while her server was down.")
    expect(document_status(bea)).not_to_have_text(re.compile("^Saved"), timeout=LONG_WAIT_MS)
    # Ada, on the other server, saves meanwhile.
    type_after(ada, "Ada's first words.", " Ada's words meanwhile.")
    expect(document_status(ada)).to_have_text(re.compile("^Saved"), timeout=LONG_WAIT_MS)

    # Server B is back: Bea's page reconnects and its retry saves her words, merged with Ada's.
    server_b.start()
    everything = text.replace(_anchor(2), _anchor(2) + " Ada's first words. Ada's words meanwhile.", 1).replace(
        _anchor(last), _anchor(last) + " Bea's first words. Bea's words while her server was down.", 1
    )
    for page in (bea, ada):
        expect(document_text(page)).to_have_value(everything, timeout=LONG_WAIT_MS)
        expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=LONG_WAIT_MS)
        expect(page.get_by_role("region", name="Document conflict")).to_be_hidden()
    assert _stored(migrated_postgres_database_url, thread_id.replace("-", "")) == everything

    # PostgreSQL closes every connection of both servers (a failover); both go on typing.
    assert end_backends(migrated_postgres_database_url)
    type_after(ada, "Ada's words meanwhile.", " Ada after the failover.")
    type_after(bea, "Bea's words while her server was down.", " Bea after the failover.")
    everything = everything.replace("Ada's words meanwhile.", "Ada's words meanwhile. Ada after the failover.", 1).replace(
        "Bea's words while her server was down.", "Bea's words while her server was down. Bea after the failover.", 1
    )
    for page in (ada, bea):
        expect(document_text(page)).to_have_value(everything, timeout=LONG_WAIT_MS)
        expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=LONG_WAIT_MS)
    assert _stored(migrated_postgres_database_url, thread_id.replace("-", "")) == everything

    for page in (ada, bea):
        page.reload()
        expect(document_text(page)).to_have_value(everything, timeout=LONG_WAIT_MS)

"""PostgreSQL stops while a person writes, in Chromium against the real
server on a cluster of the test's own (never the shared one).

The editor's save is answered 503 (haico_site.views.server_error): the
text stays on the page, which says it is not saved and tries again by
itself; once the database answers, it is saved with no key pressed, and a
reload shows all of it. The server's log says that the database went and
came back, with no traceback (docs/adr/0105)."""

import re

import pytest
from playwright.sync_api import expect

from tests.support.fake_model import Reply

from .helpers import document_status, document_text, model_env, new_thread_for, wait_for_socket

pytestmark = [pytest.mark.browser, pytest.mark.postgres]


def test_text_typed_while_the_database_is_down_is_saved_once_it_answers_again(new_page, start_haico_server, private_postgres):
    server = start_haico_server(database_url=private_postgres.url)
    page = new_page()
    url = new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    document_text(page).click()
    page.keyboard.type("Before the restart.", delay=5)
    expect(document_status(page)).to_have_text("Saved", timeout=10_000)

    private_postgres.stop()
    page.keyboard.type(" Written while it was down.", delay=5)
    alert = page.get_by_role("region", name="Document").get_by_role("alert")
    expect(alert).to_contain_text("Not saved: the server answered 503", timeout=10_000)
    expect(alert).to_contain_text("Your text is still here")
    expect(document_status(page)).to_have_text("Not saved")
    expect(document_text(page)).to_have_value("Before the restart. Written while it was down.")

    private_postgres.start()  # no key pressed from here on
    expect(document_status(page)).to_have_text("Saved", timeout=40_000)
    expect(alert).to_have_count(0)
    expect(document_text(page)).to_have_value("Before the restart. Written while it was down.")
    page.goto(url)
    expect(document_text(page)).to_have_value("Before the restart. Written while it was down.")

    log = server.log_path.read_text(errors="replace")
    assert "Traceback" not in log, log[-4000:]
    assert "the database is unreachable" in log
    assert "the database answers again after" in log


def test_a_message_sent_while_the_database_is_down_goes_by_itself_once_it_answers(
    new_page, start_haico_server, model_server, private_postgres
):
    """Send pressed while PostgreSQL is stopped: the server cannot tell
    whether it has the message (it may be one sent again after a dropped
    connection), so it says the message goes again by itself; the page sends
    it again, with its id, until the database answers: one turn, the box
    cleared, no key pressed (docs/adr/0126)."""
    model_server.script([Reply(text="Answered after the restart.")])
    server = start_haico_server(model_env(model_server), database_url=private_postgres.url)
    page = new_page()
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    box = chat.get_by_role("textbox", name="Message")
    box.fill("Sent as the database restarted")
    private_postgres.stop()
    chat.get_by_role("button", name="Send").click()
    # Either the server answers that its database is away, or, when the
    # socket noticed first and closed for the page to reconnect, the page
    # says its message goes again once connected: both send it by themselves.
    expect(page.locator("#chat-pending")).to_contain_text(
        re.compile("your message goes again by itself|once connected it is sent again as it went"), timeout=15_000
    )
    private_postgres.start()  # no key pressed from here on
    expect(chat.locator(".answer")).to_have_text(["Answered after the restart."], timeout=40_000)
    expect(box).to_have_value("")
    assert len(model_server.requests) == 1

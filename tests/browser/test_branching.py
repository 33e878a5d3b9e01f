"""Regenerate and Edit of a message, in Chromium against the real server and
a scripted model: each runs the turn again in a new branch thread (the
original unchanged), the page moves there, and the versions arrows switch
between the branch threads (docs/adr/0014)."""

import re

from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply

from .helpers import TURN_WAIT_MS, WORKSPACE_URL, model_env, new_thread_for, thread_id_from, wait_for_socket


def _chat(page: Page):
    return page.get_by_role("region", name="Chat")


def _send(page: Page, text: str, answer: str) -> None:
    chat = _chat(page)
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator(".turn").last.locator(".answer")).to_have_text(answer, timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)


def _turns(page: Page) -> list[tuple[str, str]]:
    chat = _chat(page)
    return [
        (turn.locator(".bubble-user .edit-view .bubble-text").inner_text(), turn.locator(".answer").inner_text())
        for turn in chat.locator("article.turn").all()
    ]


def _moved_to_a_new_thread(page: Page, old_url: str) -> str:
    expect(page).not_to_have_url(old_url)
    expect(page).to_have_url(re.compile(WORKSPACE_URL.pattern.rstrip("$") + "#turn-2$"))
    return page.url.split("#")[0]


def test_edit_and_regenerate_fork_the_thread_and_the_arrows_switch_versions(new_page, start_haico_server, model_server):
    model_server.script(
        [
            Reply(text="Answer one."),
            Reply(text="Answer two."),
            Reply(text="Answer to the edit."),
            Reply(text="A regenerated answer."),
        ]
    )
    server = start_haico_server(model_env(model_server))
    page = new_page()
    original = new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    _send(page, "first message", "Answer one.")
    _send(page, "second message", "Answer two.")

    # Edit turn 2: the page moves to a new thread with turn 1 and the edited turn 2.
    chat = _chat(page)
    chat.get_by_role("button", name="Edit turn 2", exact=True).click()
    box = chat.get_by_role("textbox", name="Edited message of turn 2")
    expect(box).to_have_value("second message")
    box.fill("second message, edited")
    chat.get_by_role("button", name="Send edited turn 2").click()
    edited = _moved_to_a_new_thread(page, original)
    expect(_chat(page).locator("article.turn").last.locator(".answer")).to_have_text("Answer to the edit.", timeout=TURN_WAIT_MS)
    assert _turns(page) == [("first message", "Answer one."), ("second message, edited", "Answer to the edit.")]
    versions = _chat(page).get_by_role("navigation", name="Versions of turn 2")
    expect(versions).to_contain_text("2/2")
    # The model saw turn 1 and the edited message, not the original turn 2.
    humans = [m["content"] for m in model_server.requests[-1]["messages"] if m["role"] == "user"]
    assert humans == ["first message", "second message, edited"]

    # The arrow goes back to the original, which is unchanged.
    versions.get_by_role("link", name="Previous version of turn 2").click()
    expect(page).to_have_url(original + "#turn-2")
    assert _turns(page) == [("first message", "Answer one."), ("second message", "Answer two.")]
    expect(_chat(page).get_by_role("navigation", name="Versions of turn 2")).to_contain_text("1/2")
    _chat(page).get_by_role("navigation", name="Versions of turn 2").get_by_role("link", name="Next version of turn 2").click()
    expect(page).to_have_url(edited + "#turn-2")

    # Regenerate turn 2 of the original: a third version, the same message, a new answer.
    page.goto(original)
    wait_for_socket(page)
    _chat(page).get_by_role("button", name="Regenerate turn 2", exact=True).click()
    regenerated = _moved_to_a_new_thread(page, original)
    assert regenerated not in (original, edited)
    expect(_chat(page).locator("article.turn").last.locator(".answer")).to_have_text(
        "A regenerated answer.", timeout=TURN_WAIT_MS
    )
    assert _turns(page) == [("first message", "Answer one."), ("second message", "A regenerated answer.")]
    expect(_chat(page).get_by_role("navigation", name="Versions of turn 2")).to_contain_text("3/3")
    turn_one_versions = _chat(page).get_by_role("navigation", name="Versions of turn 1")
    expect(turn_one_versions).to_have_count(0)

    # Nothing of the original was overwritten.
    page.goto(original)
    assert _turns(page) == [("first message", "Answer one."), ("second message", "Answer two.")]
    rows = server.query(
        "SELECT COUNT(*) FROM conversations_turn WHERE thread_id = ?", (thread_id_from(original).replace("-", ""),)
    )
    assert rows == [(2,)]

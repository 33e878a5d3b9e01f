"""The chat's Mode selector in Chromium (docs/adr/0018): its three modes, the
choice remembered after a reload, and the thread's other tab following it."""

from playwright.sync_api import expect

from .helpers import wait_for_socket


def test_the_mode_selector_is_remembered_and_followed_by_the_other_tab(owner_workspace, second_tab):
    first, _url = owner_workspace
    second = second_tab

    mode = first.get_by_role("region", name="Chat").get_by_role("combobox", name="Mode")
    expect(mode.get_by_role("option")).to_have_text(["Explore", "Plan", "Execute"])
    expect(mode).to_have_value("execute")

    mode.select_option(label="Plan")
    other = second.get_by_role("combobox", name="Mode")
    expect(other).to_have_value("plan")

    first.reload()
    wait_for_socket(first)
    expect(first.get_by_role("combobox", name="Mode")).to_have_value("plan")

    # And back the other way, from the second tab.
    second.get_by_role("combobox", name="Mode").select_option(label="Explore")
    expect(first.get_by_role("combobox", name="Mode")).to_have_value("explore")
    second.reload()
    expect(second.get_by_role("combobox", name="Mode")).to_have_value("explore")

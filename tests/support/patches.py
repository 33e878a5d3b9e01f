"""Reading live patches (templates/workspace/panels/*.html#patch) the way
static/js/live.js does, so view and push tests can say what a page would do."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Row:
    id: str
    attrs: dict
    text: str = ""  # the row's visible text (step text, preference title, or what a plan change did)
    number: str = ""
    checked: bool = False
    who: str = ""  # an entry of the plan's history: who made the change, and when

    @property
    def after(self):
        return self.attrs.get("data-after")

    @property
    def depth(self):
        return int(self.attrs.get("data-depth", 0))


@dataclass
class Patch:
    kind: str
    attrs: dict
    rows: list[Row] = field(default_factory=list)
    text: str = ""

    @property
    def removed(self) -> list[str]:
        return [i for i in (self.attrs.get("data-remove") or "").split(",") if i]

    @property
    def numbers(self) -> list[tuple[str, str]] | None:
        """A plan patch's (id, outline number) of every step, in order; None when it has none."""
        numbers = self.attrs.get("data-numbers")
        if numbers is None:
            return None
        return [tuple(pair.split(":", 1)) for pair in numbers.split()]  # type: ignore[misc]

    @property
    def count(self) -> tuple[str, str] | None:
        """A plan patch's (steps done, steps)."""
        if "data-done" not in self.attrs:
            return None
        return self.attrs["data-done"], self.attrs["data-steps"]


class _Reader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.patches: list[Patch] = []
        self._patch: Patch | None = None
        self._row: Row | None = None
        self._span: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "template" and "data-live-patch" in attrs:
            self._patch = Patch(kind=attrs["data-live-patch"], attrs=attrs)
            self.patches.append(self._patch)
        elif self._patch is not None and tag == "li":
            self._row = Row(id=attrs.get("id", ""), attrs=attrs)
            self._patch.rows.append(self._row)
        elif self._row is not None and tag == "span":
            self._span = attrs.get("class", "")
        elif self._row is not None and tag == "input" and attrs.get("type") == "checkbox":
            self._row.checked = "checked" in attrs

    def handle_endtag(self, tag):
        if tag == "template":
            self._patch = None
            self._row = None
        elif tag == "li":
            self._row = None
        elif tag == "span":
            self._span = None

    def handle_data(self, data):
        if self._row is not None and self._span:
            if "step-number" in self._span:
                self._row.number += data
            elif "step-text" in self._span or "pref-title" in self._span or "history-text" in self._span:
                self._row.text += data
            elif "history-who" in self._span:
                self._row.who += data
        elif self._patch is not None and self._row is None:
            self._patch.text += data


def read_patches(html: str) -> list[Patch]:
    reader = _Reader()
    reader.feed(html)
    return reader.patches


def only_patch(html: str, kind: str) -> Patch:
    found = [p for p in read_patches(html) if p.kind == kind]
    assert len(found) == 1, f"expected one {kind} patch, got {[p.kind for p in read_patches(html)]}"
    return found[0]

"""CHANGELOG.md has an entry for the package's version, newest first, and every store migration is
named in the upgrade notes of an entry (ARCHITECTURE.md, "Versions and the changelog")."""

from __future__ import annotations

import re

from foil_studio import __version__
from foil_studio.data.store.schema import MIGRATIONS
from tests.conftest import REPO
from tests.test_docs_links import outside_code

CHANGELOG = REPO / "CHANGELOG.md"
VERSION_HEADING = re.compile(r"^## (\d+)\.(\d+)\.(\d+)\b")


def sections(level: str) -> list[tuple[str, str]]:
    """(heading, body) of each heading of `level` ('##', '###') in CHANGELOG.md, outside code."""
    found: list[tuple[str, list[str]]] = []
    for line in outside_code(CHANGELOG.read_text(encoding="utf-8")):
        if re.match(r"#{1,6} ", line):
            if line.startswith(f"{level} "):
                found.append((line, []))
                continue
            if len(line) - len(line.lstrip("#")) <= len(level):
                found.append(("", []))  # a heading at or above this level ends the section
                continue
        if found:
            found[-1][1].append(line)
    return [(heading, "\n".join(body)) for heading, body in found if heading]


def versions() -> list[tuple[int, ...]]:
    """The versions of the '## X.Y.Z' entries, in the order written."""
    return [
        tuple(int(part) for part in match.groups())
        for heading, _ in sections("##")
        if (match := VERSION_HEADING.match(heading))
    ]


def test_the_newest_entry_is_the_packages_version():
    found = versions()
    assert found, "CHANGELOG.md has no '## X.Y.Z' entry"
    newest = ".".join(map(str, found[0]))
    assert newest == __version__, (
        f"foil_studio.__version__ is {__version__} but CHANGELOG.md's newest entry is {newest}: they name the same"
        " version (ARCHITECTURE.md, 'Versions and the changelog')"
    )


def test_entries_are_newest_first_and_each_once():
    found = versions()
    assert found == sorted(set(found), reverse=True), found


def test_every_migration_is_named_in_the_upgrade_notes():
    notes = "\n".join(body for heading, body in sections("###") if heading == "### Upgrade notes")
    assert notes, "CHANGELOG.md has no '### Upgrade notes' section"
    missing = [name for name, _ in MIGRATIONS if f"`{name}`" not in notes]
    assert not missing, (
        f"store migrations not named in CHANGELOG.md's upgrade notes: {missing}; say what each adds and what a "
        "user must do, in the upgrade notes of the version that brings it"
    )


def test_the_sections_are_read_as_written():
    """The reading itself: an upgrade-notes section ends at the next heading of its level or above."""
    text = CHANGELOG.read_text(encoding="utf-8")
    assert text.count("### Upgrade notes") == len(
        [body for heading, body in sections("###") if heading == "### Upgrade notes"]
    )
    for heading, body in sections("###"):
        assert not re.search(r"^#{1,3} ", body, re.MULTILINE), heading

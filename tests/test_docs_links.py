"""Every relative link of README.md, the top-level notes and docs/*.md points at a file that exists
and, with a `#fragment`, at a heading of that file (as GitHub makes heading anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
PAGES = sorted(
    [REPO / "README.md", REPO / "ARCHITECTURE.md", REPO / "BENCHMARKS.md", REPO / "TESTING.md", REPO / "CHANGELOG.md"]
    + list((REPO / "docs").glob("*.md")),
)


def outside_code(text: str) -> list[str]:
    """The lines of a markdown text outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a markdown file's headings: lower case, punctuation but `-` and `_` dropped,
    spaces as `-`, a repeated heading numbered `-1`, `-2`..."""
    seen: dict[str, int] = {}
    found = set()
    for line in outside_code(path.read_text(encoding="utf-8")):
        if match := HEADING.match(line):
            slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return found


def relative_links(path: Path) -> list[str]:
    text = " ".join(line.replace("``", "") for line in outside_code(path.read_text(encoding="utf-8")))
    text = re.sub(r"`[^`]*`", "", text)  # a link written as code is not a link
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_points_at_an_existing_file_and_heading(page):
    broken = []
    for target in relative_links(page):
        file_part, _, fragment = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            broken.append(f"{target}: no heading #{fragment} in {linked.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_readme_names_every_docs_page_and_the_notes():
    """README is the way in: each topic page and note is one link from it."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    notes = ("ARCHITECTURE.md", "BENCHMARKS.md", "TESTING.md", "CHANGELOG.md")
    for page in [*(REPO / "docs").glob("*.md"), *(REPO / note for note in notes)]:
        assert f"]({page.relative_to(REPO)})" in readme, page.name
    assert len(readme.splitlines()) <= 200, "README is the way in, not the manual: move detail into docs/"

"""README's tables and lists that come from the registries, generated (never pasted): `make docs`
writes them, `python docs/readme_tables.py --check` (and a test) fails when README differs.

A generated section in README.md is

    <!-- generated: NAME -->
    ...what SECTIONS[NAME]() returns...
    <!-- end generated -->

and the choice lists inside command lines (`./foil export DATASET --format a\\|b\\|c --out DIR`) are
rewritten in place by INLINE. Sibling of `docs/readme_outputs.py`, which keeps the demo outputs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import cli  # noqa: E402  (the checkout's own registries, wherever this is run from)
from annotate.task_types import task_table  # noqa: E402
from data.formats import EXPORT_FORMATS, import_table  # noqa: E402

SECTION = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)
SECTIONS: dict[str, Callable[[], str]] = {
    "import-kinds": import_table,
    "task-types": task_table,
}


def choices(names: list[str] | tuple[str, ...]) -> str:
    """A choice list as README's tables write it (`a\\|b`: a pipe inside a table cell)."""
    return "\\|".join(names)


# (what a choice list follows, what it precedes, the choices now)
INLINE: dict[str, tuple[str, str, Callable[[], str]]] = {
    "export formats": ("`./foil export DATASET --format ", " --out DIR`", lambda: choices(EXPORT_FORMATS)),
    "clean formats": ("`./foil export-clean BATCH --format ", " --out DIR`", lambda: choices(cli.CLEAN_FORMATS)),
}


def regenerate(readme: str) -> str:
    """README with every generated section and choice list as the registries give them now."""
    unknown = sorted({m.group("name") for m in SECTION.finditer(readme)} - set(SECTIONS))
    if unknown:
        raise ValueError(f"README.md has generated sections {unknown}; known: {sorted(SECTIONS)}")
    readme = SECTION.sub(lambda m: m.group(1) + SECTIONS[m.group("name")]() + "\n" + m.group(4), readme)
    for name, (before, after, now) in INLINE.items():
        readme = replace_list(readme, name, before, after, now())
    return readme


def replace_list(readme: str, name: str, before: str, after: str, text: str) -> str:
    """README with the choice list between `before` and `after` set to `text`."""
    pattern = re.compile(re.escape(before) + r"[\w\\|-]+" + re.escape(after))
    if not pattern.search(readme):
        raise ValueError(f"README.md has no {name} list ({before}...{after})")
    return pattern.sub(lambda _: before + text + after, readme)


def stale_parts(readme: str, fresh: str) -> list[str]:
    """The names of the sections and lists that differ between two READMEs."""
    old = {m.group("name"): m.group("body") for m in SECTION.finditer(readme)}
    new = {m.group("name"): m.group("body") for m in SECTION.finditer(fresh)}
    stale = [f"section {name}" for name in SECTIONS if name not in old or old[name] != new[name]]
    return stale + [name for name, (before, _, _) in INLINE.items() if _line(readme, before) != _line(fresh, before)]


def _line(text: str, start: str) -> str:
    return next((line for line in text.splitlines() if start in line), "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1, naming the parts, when README differs")
    args = parser.parse_args(argv)
    readme_path = REPO / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    fresh = regenerate(readme)
    if not args.check:
        readme_path.write_text(fresh, encoding="utf-8")
        return 0
    stale = stale_parts(readme, fresh)
    for part in stale:
        print(f"README.md: the {part} is not what the registries give; run `make docs`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())

"""README's tables that come from the registries, generated (never pasted): `make docs`
writes them, `python docs/readme_tables.py --check` (and a test) fails when README differs.

A generated section in README.md is

    <!-- generated: NAME -->
    ...what SECTIONS[NAME]() returns...
    <!-- end generated -->

Sibling of `docs/readme_outputs.py`, which keeps the demo outputs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from foil_studio import cli  # noqa: E402  (the checkout's own registries, wherever this is run from)
from foil_studio.analysis.scorers import family_table  # noqa: E402
from foil_studio.annotate.task_types import task_table  # noqa: E402
from foil_studio.data.formats import import_table  # noqa: E402

SECTION = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)
NOTEBOOK_EXAMPLE = REPO / "docs" / "notebook_example.py"


def notebook_example() -> str:
    """The Python API example, as the file a test runs."""
    return "```python\n" + NOTEBOOK_EXAMPLE.read_text(encoding="utf-8") + "```"


SECTIONS: dict[str, Callable[[], str]] = {
    "import-kinds": import_table,
    "task-types": task_table,
    "commands": cli.command_table,
    "scorer-families": family_table,
    "notebook-example": notebook_example,
}


def regenerate(readme: str) -> str:
    """README with every generated section as the registries give them now."""
    unknown = sorted({m.group("name") for m in SECTION.finditer(readme)} - set(SECTIONS))
    if unknown:
        raise ValueError(f"README.md has generated sections {unknown}; known: {sorted(SECTIONS)}")
    return SECTION.sub(lambda m: m.group(1) + SECTIONS[m.group("name")]() + "\n" + m.group(4), readme)


def stale_parts(readme: str, fresh: str) -> list[str]:
    """The names of the sections that differ between two READMEs."""
    old = {m.group("name"): m.group("body") for m in SECTION.finditer(readme)}
    new = {m.group("name"): m.group("body") for m in SECTION.finditer(fresh)}
    return [f"section {name}" for name in SECTIONS if name not in old or old[name] != new[name]]


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

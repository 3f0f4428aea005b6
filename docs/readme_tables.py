"""The tables of README.md and docs/*.md that come from the registries, generated (never pasted):
`make docs` writes them, `python docs/readme_tables.py --check` (`make docs-check`, in the gate,
and a test) fails naming each file and block that differs.

A generated block, in README.md or any docs/*.md, is

    <!-- generated: NAME -->
    ...what SECTIONS[NAME]() returns...
    <!-- end generated -->

Sibling of `docs/readme_outputs.py`, which keeps the demo outputs (`<!-- output: ... -->` blocks).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from foil_studio import cli, plugin_checks  # noqa: E402  (the checkout's own registries, wherever this is run from)
from foil_studio.analysis.scorers import family_table  # noqa: E402
from foil_studio.annotate.task_types import task_table  # noqa: E402
from foil_studio.data import plugins  # noqa: E402
from foil_studio.data.demo import DEMO_DATASETS  # noqa: E402
from foil_studio.data.formats import import_table  # noqa: E402
from foil_studio.data.item_kinds import REGISTRY as ITEM_KINDS  # noqa: E402
from foil_studio.views.registry import pages_section  # noqa: E402

SECTION = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)
NOTEBOOK_EXAMPLE = REPO / "docs" / "notebook_example.py"
# The files with generated parts, in the order readme_outputs.py runs their output blocks (on one
# store, so a block may use what an earlier one left: docs/python-api.md's example reads the batch
# docs/statistics.md's block makes); any other docs/*.md comes after, by name.
FILE_ORDER = ("README.md", "docs/formats.md", "docs/statistics.md", "docs/python-api.md", "docs/demo.md")


def doc_files() -> list[Path]:
    """README.md and every docs/*.md, those of `FILE_ORDER` first."""
    named = [REPO / name for name in FILE_ORDER]
    rest = sorted(set(REPO.glob("docs/*.md")) - set(named))
    return [path for path in [*named, *rest] if path.exists()]


def notebook_example() -> str:
    """The Python API example, as the file a test runs."""
    return "```python\n" + NOTEBOOK_EXAMPLE.read_text(encoding="utf-8") + "```"


def item_kind_table() -> str:
    """Every registered item kind: its images and captions in order, its metric family, its demo dataset."""
    rows = ["| kind | images | captions | metric family | demo dataset |", "| --- | --- | --- | --- | --- |"]
    for name, kind in ITEM_KINDS.items():
        demo = f"`{DEMO_DATASETS[name]}`" if name in DEMO_DATASETS else "-"
        family = f"`{kind.metric_family}`" if kind.metric_family else "- (no model metric)"
        marked = plugins.marked(plugins.ITEM_KINDS, name)
        rows.append(f"| {marked} | `{kind.images}` | `{kind.captions}` | {family} | {demo} |")
    return "\n".join(rows)


def registry_of(group: str) -> plugins.Registry[Any]:
    """The registry an entry-point group adds to (`plugins.GROUPS` names it)."""
    module, _, name = plugins.GROUPS[group].rpartition(".")
    return getattr(importlib.import_module(module), name)


def plugin_group_table() -> str:
    """Each entry-point group: the registry it adds to, the record an entry point names, where that is imported from."""
    rows = ["| entry-point group | adds to | an entry point names a | imported from |", "| --- | --- | --- | --- |"]
    for group, where in plugins.GROUPS.items():
        record = registry_of(group).record_type
        rows.append(f"| `{group}` | `{where}` | `{record.__name__}` | `{record.__module__}` |")
    return "\n".join(rows)


def record_fields_section() -> str:
    """Each plugin record's fields, as its dataclass declares them: name, type, default (the class
    docstring, under each heading's name, says what each means)."""
    parts = []
    for group in plugins.GROUPS:
        record = registry_of(group).record_type
        parts.append(f"#### `{record.__name__}` (`{group}`)\n")
        rows = ["| field | type | default |", "| --- | --- | --- |"]
        for field in dataclasses.fields(record):
            rows.append(f"| `{field.name}` | `{_cell(str(field.type))}` | {_default(field)} |")
        parts.append("\n".join(rows) + "\n")
    return "\n".join(parts).rstrip("\n")


def _default(field: dataclasses.Field[Any]) -> str:
    if field.default is not dataclasses.MISSING:
        return f"`{_cell(repr(field.default))}`" if not callable(field.default) else f"`{field.default.__name__}`"
    if field.default_factory is not dataclasses.MISSING:
        return f"`{_cell(repr(field.default_factory()))}`"
    return "required"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def plugin_checks_table() -> str:
    """The generic checks of `foil_studio.plugin_checks`, each with its docstring's first sentence."""
    rows = ["| check | what it checks |", "| --- | --- |"]
    for name in (
        "check_format",
        "check_task_type",
        "check_task_buttons",
        "check_task_layout",
        "check_metric_family",
        "check_item_kind",
        "check_scorer_family",
        "check_plugin",
    ):
        function = getattr(plugin_checks, name)
        signature = str(inspect.signature(function)).replace("'", "")
        about = " ".join((function.__doc__ or "").split())
        rows.append(f"| `{name}{_cell(signature)}` | {_cell(about)} |")
    return "\n".join(rows)


SECTIONS: dict[str, Callable[[], str]] = {
    "import-formats": import_table,
    "item-kinds": item_kind_table,
    "task-types": task_table,
    "commands": cli.command_table,
    "scorer-families": family_table,
    "plugin-groups": plugin_group_table,
    "plugin-record-fields": record_fields_section,
    "plugin-checks": plugin_checks_table,
    "pages": pages_section,
    "notebook-example": notebook_example,
}


def regenerate(text: str, name: str = "README.md") -> str:
    """`text` (the file `name`) with every generated section as the registries give them now."""
    unknown = sorted({m.group("name") for m in SECTION.finditer(text)} - set(SECTIONS))
    if unknown:
        raise ValueError(f"{name} has generated sections {unknown}; known: {sorted(SECTIONS)}")
    return SECTION.sub(lambda m: m.group(1) + SECTIONS[m.group("name")]() + "\n" + m.group(4), text)


def stale_parts(text: str, fresh: str) -> list[str]:
    """The names of the sections that differ between a file as it is and as generated."""
    old = [(m.group("name"), m.group("body")) for m in SECTION.finditer(text)]
    new = [m.group("body") for m in SECTION.finditer(fresh)]
    return [f"generated section `{name}`" for (name, body), now in zip(old, new) if body != now]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale file and section")
    args = parser.parse_args(argv)
    stale = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        fresh = regenerate(text, str(path.relative_to(REPO)))
        if args.check:
            stale += [f"{path.relative_to(REPO)}: the {part} is stale" for part in stale_parts(text, fresh)]
        elif fresh != text:
            path.write_text(fresh, encoding="utf-8")
    for line in stale:
        print(f"{line}; run `make docs`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())

"""The benchmark formats: one module per benchmark with its reader and writer, listed once in
``REGISTRY``.

The CLI's ``import`` formats and ``export --format`` choices, the Datasets page's import form and
the README's import table (``import_table``; a test keeps the README in step) all come from this
registry; a new benchmark is a new module defining its ``Format`` and one line below, or an
installed package's entry point in group ``foil_studio.formats`` (docs/plugins.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foil_studio.data import plugins
from foil_studio.data.formats import (
    aro,
    bivlc,
    crepe,
    gpt4v,
    hard_positives,
    hf,
    jsonl,
    made_here,
    sugarcrepe,
    sugarcrepe_pp,
    valse,
    whatsup,
    winoground,
)
from foil_studio.data.formats.base import (
    BadInputError,
    ExportContext,
    Format,
    ImportWarning,
    Parsed,
    Reader,
    RunSpec,
    Writer,
)

# Datasets made here, not imported (the demo, BiVLC's construction): their source records.
MADE_HERE: dict[str, Format] = {f.name: f for f in (made_here.DEMO, made_here.CONSTRUCTION, made_here.ARO_ORDER)}
# The built-in formats, then each installed plugin's (`data.plugins`, entry-point group foil_studio.formats).
REGISTRY: plugins.Registry[Format] = plugins.Registry(
    plugins.FORMATS,
    Format,
    (
        sugarcrepe.SUGARCREPE,
        sugarcrepe.SUGARCREPE_CORRECT,
        bivlc.BIVLC_RESULTS,
        gpt4v.GPT4V,
        bivlc.BIVLC,
        bivlc.BIVLC_CANDIDATES,
        hard_positives.HARD_POSITIVES,
        aro.ARO,
        crepe.CREPE,
        valse.VALSE,
        sugarcrepe_pp.SUGARCREPE_PP,
        hf.HF,
        winoground.WINOGROUND,
        whatsup.WHATSUP,
        jsonl.JSONL,
        jsonl.PARQUET,
    ),
    reserved=MADE_HERE,
)
if TYPE_CHECKING:  # computed on first use, with the registry (`__getattr__` below)
    IMPORT_FORMATS: tuple[str, ...]  # what `./foil import FORMAT` reads, in registry order
    EXPORT_FORMATS: tuple[str, ...]  # what `export --format` writes
__getattr__ = plugins.lazy_names(
    globals(),
    IMPORT_FORMATS=lambda: tuple(name for name, f in REGISTRY.items() if f.read is not None),
    EXPORT_FORMATS=lambda: tuple(name for name, f in REGISTRY.items() if f.write is not None),
)

__all__ = [
    "REGISTRY",
    "MADE_HERE",
    "IMPORT_FORMATS",
    "EXPORT_FORMATS",
    "BadInputError",
    "ExportContext",
    "Format",
    "ImportWarning",
    "Parsed",
    "Reader",
    "RunSpec",
    "Writer",
    "import_table",
    "source_format",
]


def source_format(name: str) -> Format:
    """The record of the format (or the maker, `MADE_HERE`) named `name`, a dataset's
    ``source_format`` its items came from; the generic defaults for any other source."""
    return REGISTRY.get(name) or MADE_HERE.get(name) or Format(name, "")


def import_table() -> str:
    """The table of import formats (docs/formats.md), one row per reader.

    >>> import_table().splitlines()[0]
    '| format | example | reads | its Hub copies (`import hf`) |'
    """
    rows = ["| format | example | reads | its Hub copies (`import hf`) |", "| --- | --- | --- | --- |"]
    for f in REGISTRY.values():
        name = plugins.marked(plugins.FORMATS, f.name)
        if f.read is not None:
            rows.append(f"| {name} | `{f.example}` | {f.layout} | {_hub_copies(f)} |")
    return "\n".join(rows)


def _hub_copies(fmt: Format) -> str:
    """The Hub ids of a format's Hugging Face layouts, or the columns of a layout that names none."""
    return "; ".join(
        ", ".join(f"`{hub_id}`" for hub_id in layout.hub_ids)
        or "any copy with " + ", ".join(f"`{c}`" for c in sorted(layout.columns))
        for layout in fmt.hub_layouts
    )

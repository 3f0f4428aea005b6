"""The hard-positives set (Kamath et al. 2024): triples of a caption, its negative and a hard
positive (a meaning-preserving rewrite), in ``data/X.json`` and ``swapped_data/X.json``."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from foil_studio.data.formats.base import (
    ExportContext,
    Format,
    Parsed,
    StoredItem,
    json_files,
    make_item,
    require_keys,
    write_json_files,
)
from foil_studio.data.reading import BadInputError, check_id, read_json

HARD_POSITIVE_FIELDS = ("true_caption", "false_caption", "image_path")


def parse_hard_positives(path: Path) -> Parsed:
    """Hard-positive triples: `data/X.json` (c, c_n) joined row by row with `swapped_data/X.json` (c_p)."""
    originals = json_files(path / "data") if path.is_dir() else [path]
    parsed = Parsed("hard-positives", "hard-positives")
    for original in originals:
        swapped = original.parent.parent / "swapped_data" / original.name
        if not swapped.is_file():
            raise BadInputError(original, None, f"no matching hard-positive file {swapped}")
        _join_hard_positives(parsed, original, swapped)
    return parsed


def _join_hard_positives(parsed: Parsed, original: Path, swapped: Path) -> None:
    rows, positives = read_json(original), read_json(swapped)
    for file, records in ((original, rows), (swapped, positives)):
        if not isinstance(records, list):
            raise BadInputError(file, None, "expected a list of {image_id, true_caption, false_caption, image_path}")
    if len(rows) != len(positives):
        raise BadInputError(
            swapped, None, f"has {len(positives)} rows but {original} has {len(rows)}; files are misaligned"
        )
    category = original.stem.lower()
    for number, (row, positive) in enumerate(zip(rows, positives), start=1):
        require_keys(row, HARD_POSITIVE_FIELDS, original, number)
        require_keys(positive, HARD_POSITIVE_FIELDS, swapped, number)
        if (row["image_path"], row["false_caption"]) != (positive["image_path"], positive["false_caption"]):
            raise BadInputError(
                swapped,
                number,
                f"does not match {original} row {number} (image or negative caption differ); files are misaligned",
            )
        item = make_item(
            original,
            number,
            kind="triple",
            category=category,
            source_id=f"{category}/{number}",
            captions=(row["true_caption"], row["false_caption"], positive["true_caption"]),
            images=(row["image_path"],),
            meta={"image_id": check_id(row["image_id"], original, number, "image_id") if "image_id" in row else ""},
        )
        parsed.add(item, original, number)


def write_hard_positives(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """`data/{category}.json` (caption, negative) and `swapped_data/{category}.json` (hard
    positive, same negative), row by row, as the importer joins them."""
    originals: dict[str, list[dict[str, str]]] = defaultdict(list)
    swapped: dict[str, list[dict[str, str]]] = defaultdict(list)
    for item in items:
        caption, negative, positive = item["captions"]
        shared = {
            "image_id": str(item["meta"].get("image_id", "")),
            "image_path": (item["images"] or [""])[0],
            "false_caption": negative,
        }
        originals[item["category"]].append({**shared, "true_caption": caption})
        swapped[item["category"]].append({**shared, "true_caption": positive})
    files = {
        f"{folder}/{category}": rows
        for folder, tables in (("data", originals), ("swapped_data", swapped))
        for category, rows in tables.items()
    }
    return write_json_files(out, files)


HARD_POSITIVES = Format(
    "hard-positives",
    "`data/X.json` joined row by row with `swapped_data/X.json`; misaligned files refused",
    "./foil import hard-positives hard_positives/",
    parse_hard_positives,
    write_hard_positives,
    writes=("triple",),
    ties_because="the hard-positives evaluation compares scores with a strict >",
    source_fixture="hard_positives",
)

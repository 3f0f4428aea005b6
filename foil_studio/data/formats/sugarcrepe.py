"""SugarCrepe (Hsieh et al. 2023): pairs of an image, its caption and a hard negative.

Reads the authors' ``{category}.json`` files and BiVLC's per-instance SugarCrepe results
(``SUGARCREPE_CORRECT_<model>.csv``, a run of 0/1 decisions); writes the JSON layout back.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from foil_studio.data.formats.base import (
    ExportContext,
    Format,
    Parsed,
    RunSpec,
    StoredItem,
    keyed_records,
    make_item,
    model_from_stem,
    read_bool,
    write_json_files,
)
from foil_studio.data.items import Item, category_key
from foil_studio.data.reading import read_csv_rows

SUGARCREPE_FIELDS = ("filename", "caption", "negative_caption")


def parse_sugarcrepe(path: Path) -> Parsed:
    """SugarCrepe JSON files, one per category: `{id: {filename, caption, negative_caption}}`."""
    parsed = Parsed("sugarcrepe", "sugarcrepe")
    for file, key, record in keyed_records(path, SUGARCREPE_FIELDS):
        category = file.stem.lower()
        parsed.add(sugarcrepe_pair(record, category, f"{category}/{key}", file, key), file, key)
    return parsed


def sugarcrepe_pair(record: dict[str, Any], category: str, source_id: str, file: Path, row: int | str) -> Item:
    """One SugarCrepe record as a pair item."""
    return make_item(
        file,
        row,
        kind="pair",
        category=category,
        source_id=source_id,
        captions=(record["caption"], record["negative_caption"]),
        images=(record["filename"],),
    )


def parse_sugarcrepe_correct(path: Path) -> Parsed:
    """BiVLC's per-instance SugarCrepe results: one 0/1 `correct` per item."""
    model = model_from_stem(path, "SUGARCREPE_CORRECT_")
    parsed = Parsed("sugarcrepe", "sugarcrepe", run=RunSpec(model, "correct", model))
    columns = ("filename", "caption", "negative_caption", "type", "subtype", "correct")
    for number, row in read_csv_rows(path, columns):
        category = category_key(row["type"], row["subtype"])
        item = sugarcrepe_pair(row, category, f"{category}/csv-{number}", path, number)
        parsed.add(item, path, number, {"correct": read_bool(row["correct"], path, number, "correct")})
    return parsed


def write_sugarcrepe(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """SugarCrepe's layout: one `{category}.json` per category, `{id: {filename, caption, negative_caption}}`.

    Ids are the part of each item's source id after the last "/", as the importer made them.
    """
    by_category: dict[str, dict[str, Any]] = defaultdict(dict)
    for item in items:
        key = item["source_id"].rsplit("/", 1)[-1]
        by_category[item["category"]][key] = {
            "filename": (item["images"] or [""])[0],
            "caption": item["captions"][0],
            "negative_caption": item["captions"][1],
        }
    return write_json_files(out, by_category)


SUGARCREPE = Format(
    "sugarcrepe",
    "one `{category}.json` per category (`data/` or `data_unrefined/`, use `--name sugarcrepe-unrefined`)",
    "./foil import sugarcrepe sugar-crepe/data --images coco/val2017",
    parse_sugarcrepe,
    write_sugarcrepe,
    writes=("pair",),
    ties_because="SugarCrepe's evaluation counts `pos > neg`: a tie is wrong",
    sample_fixture="sugarcrepe/data/swap_att.json",
)
SUGARCREPE_CORRECT = Format(
    "sugarcrepe-correct",
    "BiVLC's per-instance SugarCrepe results, a run (`correct` 0/1); creates absent items",
    "./foil import sugarcrepe-correct results/SUGARCREPE_CORRECT_ViT-B-32.csv",
    parse_sugarcrepe_correct,
)

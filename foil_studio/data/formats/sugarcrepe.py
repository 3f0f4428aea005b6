"""SugarCrepe (Hsieh et al. 2023): pairs of an image, its caption and a hard negative.

Reads the authors' ``{category}.json`` files and BiVLC's per-instance SugarCrepe results
(``SUGARCREPE_CORRECT_<model>.csv``, a run of 0/1 decisions); writes the JSON layout back. On the
Hugging Face Hub (`import hf`): a copy with ``caption`` and ``negative_caption`` beside its image, a
split per category, and HuggingFaceM4's repositories of one category each (``SugarCrepe_swap_att``...:
``image``, ``tested_labels`` [the two captions], ``true_label`` naming the right one), whose category
only the repository's name says (``--category swap_att``). A row's id is its place in the split, as
the authors' files number their records from 0.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from foil_studio.data.formats.base import (
    ExportContext,
    Format,
    HubLayout,
    Parsed,
    RunSpec,
    StoredItem,
    image_ref,
    keyed_records,
    make_item,
    model_from_stem,
    read_bool,
    require_keys,
    write_json_files,
)
from foil_studio.data.items import Item, category_key
from foil_studio.data.reading import BadInputError, check_id, read_csv_rows

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


def add_hub_pairs(parsed: Parsed, category: str | None, rows: list[Any], file: Path) -> None:
    """One category of a Hub copy: `{image, caption, negative_caption}` rows (`filename` for `image`, an
    `id` where kept)."""
    assert category is not None  # the layout's categories are its splits' names
    category = category.lower()
    for number, row in enumerate(rows):
        require_keys(row, ("caption", "negative_caption"), file, number + 1)
        key = check_id(row["id"], file, number + 1, "id") if "id" in row else str(number)
        image = image_ref(parsed, row.get("image") or row.get("filename"), file, number + 1)
        pair = sugarcrepe_pair({**row, "filename": image}, category, f"{category}/{key}", file, number + 1)
        parsed.add(pair, file, number + 1)


def add_labelled_pairs(parsed: Parsed, category: str | None, rows: list[Any], file: Path) -> None:
    """HuggingFaceM4's copy of one category: `tested_labels` holds the caption and the negative,
    `true_label` names the caption (a `ClassLabel`, read as its name)."""
    assert category is not None  # given by --category: the copy names none
    category = category.lower()
    for number, row in enumerate(rows):
        labels, right = row.get("tested_labels"), row.get("true_label")
        if not (isinstance(labels, list) and len(labels) == 2 and labels[0] != labels[1] and right in labels):
            raise BadInputError(
                file,
                number + 1,
                f"tested_labels {labels!r} and true_label {right!r}: expected two different captions and the name "
                "of the right one (a ClassLabel whose names the copy records)",
            )
        negative = labels[1] if labels[0] == right else labels[0]
        image = image_ref(parsed, row.get("image"), file, number + 1)
        record = {"caption": right, "negative_caption": negative, "filename": image}
        parsed.add(sugarcrepe_pair(record, category, f"{category}/{number}", file, number + 1), file, number + 1)


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
    source_fixture="sugarcrepe/data/swap_att.json",
    hub_layouts=(
        HubLayout(frozenset({"caption", "negative_caption"}), add_hub_pairs),
        HubLayout(
            frozenset({"image", "tested_labels", "true_label"}),
            add_labelled_pairs,
            hub_ids=tuple(
                f"HuggingFaceM4/SugarCrepe_{c}"
                for c in ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
            ),
        ),
    ),
)
SUGARCREPE_CORRECT = Format(
    "sugarcrepe-correct",
    "BiVLC's per-instance SugarCrepe results, a run (`correct` 0/1); creates absent items",
    "./foil import sugarcrepe-correct results/SUGARCREPE_CORRECT_ViT-B-32.csv",
    parse_sugarcrepe_correct,
)

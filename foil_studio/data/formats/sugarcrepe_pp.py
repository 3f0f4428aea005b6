"""SugarCrepe++ (Dumpala, Jaiswal et al., NeurIPS 2024 D&B): SugarCrepe items with a second
positive caption, one JSON list per category (``replace_att.json``... as in the repository's
``VLMs/data/``; the Hugging Face copy's names, ``swap_object``, ``swap_atribute`` (sic)..., are
read as the same categories).

Each record ``{id, filename, caption, caption2, negative_caption}`` becomes a ``paraphrase``
item with captions ``[caption, negative_caption, caption2]`` (positive and negative first, as in
every item kind). Metrics (``analysis.metrics.paraphrase_outcomes``) follow the repository's README
and ``evaluate_ulms.py``: ITT, Image-P1-Neg, Image-P2-Neg and the text-only TOT, all strict.
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
    StoredItem,
    image_ref,
    json_files,
    make_item,
    require_keys,
    write_json_files,
)
from foil_studio.data.reading import BadInputError, check_id, read_json

PP_FIELDS = ("filename", "caption", "caption2", "negative_caption")
# The Hugging Face dataset's split names -> the repository's file names.
CATEGORY_ALIASES = {
    "replace_attribute": "replace_att",
    "replace_object": "replace_obj",
    "replace_relation": "replace_rel",
    "swap_attribute": "swap_att",
    "swap_atribute": "swap_att",
    "swap_object": "swap_obj",
}


def category_of(file: Path) -> str:
    """The category a file holds, from its name (either naming).

    >>> category_of(Path("swap_atribute.json")), category_of(Path("replace_rel.json"))
    ('swap_att', 'replace_rel')
    """
    return category_name(file.stem)


def category_name(name: str) -> str:
    """The repository's name of a category from either naming (the Hub's split names).

    >>> category_name("swap_atribute"), category_name("Swap_Attribute"), category_name("add_att")
    ('swap_att', 'swap_att', 'add_att')
    """
    return CATEGORY_ALIASES.get(name.lower(), name.lower())


def parse_sugarcrepe_pp(path: Path) -> Parsed:
    """SugarCrepe++ category files: a JSON list of `{id, filename, caption, caption2, negative_caption}`."""
    parsed = Parsed("sugarcrepe-pp", "sugarcrepe-pp")
    for file in json_files(path):
        records = read_json(file)
        if not isinstance(records, list):
            raise BadInputError(file, None, f"expected a list of records with {['id', *PP_FIELDS]}")
        add_records(parsed, category_of(file), records, file)
    return parsed


def add_records(parsed: Parsed, category: str | None, records: list[Any], file: Path) -> None:
    """Add one category's records to `parsed` as `paraphrase` items (the JSON files' records, or a
    Hugging Face copy's rows, whose image may be an embedded `{bytes, path}` instead of `filename`)."""
    assert category is not None  # the layout's categories are its splits' names
    category = category_name(category)
    for number, record in enumerate(records, start=1):
        image = record.get("image") if isinstance(record, dict) and record.get("image") else None
        require_keys(record, PP_FIELDS[1:] if image else PP_FIELDS, file, number)
        key = check_id(record["id"], file, number, "id") if "id" in record else str(number - 1)
        parsed.add(
            make_item(
                file,
                number,
                kind="paraphrase",
                category=category,
                source_id=f"{category}/{key}",
                captions=(record["caption"], record["negative_caption"], record["caption2"]),
                images=(image_ref(parsed, image or record["filename"], file, number),),
            ),
            file,
            number,
        )


def write_sugarcrepe_pp(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """One `{category}.json` list per category, records as the repository's, ids from the source ids."""
    files: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        caption, negative, second = item["captions"]
        key = item["source_id"].rsplit("/", 1)[-1]
        files[item["category"]].append(
            {
                "id": int(key) if key.isdigit() else key,
                "filename": (item["images"] or [""])[0],
                "caption": caption,
                "caption2": second,
                "negative_caption": negative,
            }
        )
    return write_json_files(out, files)


SUGARCREPE_PP = Format(
    "sugarcrepe-pp",
    "one JSON list per category (`replace_att.json`...; Hugging Face names such as `swap_atribute` accepted): `{id, "
    "filename, caption, caption2, negative_caption}`; ITT, Image-P1-Neg, Image-P2-Neg and text-only TOT",
    "./foil import sugarcrepe-pp scpp/VLMs/data --images coco/val2017",
    parse_sugarcrepe_pp,
    write_sugarcrepe_pp,
    writes=("paraphrase",),
    metric_names={"itt": "ITT", "image_p1_neg": "Image-P1-Neg", "image_p2_neg": "Image-P2-Neg", "tot": "TOT"},
    ties_because="SugarCrepe++'s evaluation compares with a strict >: a tie is a miss",
    source_fixture="sugarcrepe_pp/data/swap_att.json",
    hub_layouts=(
        HubLayout(
            frozenset({"caption", "caption2", "negative_caption"}),
            add_records,
            hub_ids=("Aman-J/SugarCrepe_pp",),
            category_name=category_name,
        ),
    ),
)

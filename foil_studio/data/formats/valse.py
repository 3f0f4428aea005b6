"""VALSE (Parcalabescu et al., ACL 2022): image, caption and foil, in 11 pieces (one JSON file
each: existence, plurals, counting-*, relations, action-*, actant-swap, coreference-*, foil-it).

Each instance carries the authors' crowd validation, ``mturk: {caption, foil, other}``: of three
annotators, how many chose the caption (and not the foil), the foil, or neither. It is kept as
the item's vote counts (``meta["votes"]``), and the authors' rule, a foil is valid when
``mturk.caption >= 2``, as ``truth["valid_foil"]``. Images come from several source datasets
(SWiG, VisDial, Visual7W, COCO...): under ``--images`` they may lie flat or in one folder per
source dataset (``place_images`` finds which).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from foil_studio.data.formats.base import (
    ExportContext,
    Format,
    Parsed,
    StoredItem,
    keyed_records,
    make_item,
    write_json_files,
)
from foil_studio.data.items import Item
from foil_studio.data.reading import BadInputError, check_count

VALSE_FIELDS = ("caption", "foil", "image_file", "dataset")
VOTES = ("caption", "foil", "other")
VALID_FOIL_VOTES = 2  # the authors' rule: a foil is valid when at least 2 of 3 chose the caption


def parse_valse(path: Path) -> Parsed:
    """VALSE piece files: `{key: {dataset, image_file, caption, foil, mturk, ...}}`."""
    parsed = Parsed("valse", "valse")
    for file, key, record in keyed_records(path, VALSE_FIELDS):
        parsed.add(_valse_pair(record, file.stem.lower(), key, file), file, key)
    return parsed


def _valse_pair(record: dict[str, Any], piece: str, key: str, file: Path) -> Item:
    votes = _votes(record.get("mturk"), file, key)
    return make_item(
        file,
        key,
        kind="pair",
        category=piece,
        source_id=f"{piece}/{key}",
        captions=(record["caption"], record["foil"]),
        images=(record["image_file"].strip(),),
        truth={"valid_foil": votes["caption"] >= VALID_FOIL_VOTES} if votes else {},
        meta={
            "source_dataset": record["dataset"],
            "image_file": record["image_file"].strip(),
            **({"votes": votes} if votes else {}),
        },
    )


def _votes(mturk: Any, file: Path, key: str) -> dict[str, int] | None:
    """The crowd votes as counts per answer, or None for an instance without them."""
    if mturk is None:
        return None
    if not isinstance(mturk, dict) or not all(k in mturk for k in VOTES):
        raise BadInputError(
            file, key, f"mturk is {mturk!r}; expected vote counts {{caption, foil, other}} as whole numbers"
        )
    return {k: check_count(mturk[k], file, key, f"mturk.{k}") for k in VOTES}


def place_images(parsed: Parsed, root: Path) -> Parsed:
    """Image paths as found under `root`: `image_file` flat, else `{source dataset}/image_file`."""
    return dataclasses.replace(
        parsed, items=[dataclasses.replace(item, images=(_found(root, item),)) for item in parsed.items]
    )


def _found(root: Path, item: Item) -> str:
    flat, nested = item.images[0], f"{item.meta['source_dataset']}/{item.images[0]}"
    return nested if not (root / flat).is_file() and (root / nested).is_file() else flat


def valid_foils(parsed: Parsed) -> dict[str, Any]:
    """For the import report: per piece, the instances and the valid foils by the authors' rule."""
    pieces: dict[str, Counter[str]] = defaultdict(Counter)
    for item in parsed.items:
        pieces[item.category]["items"] += 1
        pieces[item.category]["valid_foils"] += int(bool(item.truth.get("valid_foil")))
    return {
        "valid_foils": {piece: counts["valid_foils"] for piece, counts in sorted(pieces.items())},
        "valid_foil_rule": f"mturk.caption >= {VALID_FOIL_VOTES} of 3",
    }


def write_valse(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """One `{piece}.json` per piece, keyed as the source was, with the crowd votes as `mturk`."""
    pieces: dict[str, dict[str, Any]] = defaultdict(dict)
    for item in items:
        piece, _, key = item["source_id"].partition("/")
        meta = item["meta"]
        record = {
            "dataset": meta.get("source_dataset", ""),
            "image_file": meta.get("image_file", (item["images"] or [""])[0]),
            "linguistic_phenomena": piece,
            "caption": item["captions"][0],
            "foil": item["captions"][1],
        }
        if "votes" in meta:
            record["mturk"] = meta["votes"]
        pieces[piece][key] = record
    return write_json_files(out, pieces)


VALSE = Format(
    "valse",
    "one JSON file per piece (`existence.json`, `plurals.json`, `counting-hard.json`...): caption, foil, image and the "
    "authors' three crowd votes (`mturk`); the import reports the valid foils per piece (`mturk.caption >= 2`); images "
    "flat under `--images` or in one folder per source dataset",
    "./foil import valse VALSE/data --images valse_images/",
    parse_valse,
    write_valse,
    writes=("pair",),
    place_images=place_images,
    report=valid_foils,
    metric_names={"accuracy_micro": "acc_r", "accuracy_macro": "acc_r_macro"},
    ties_because="VALSE's acc_r counts the caption scored above the foil (strict >)",
    source_fixture="valse/data/existence.json",
)

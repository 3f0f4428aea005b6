"""EqBen (Wang et al. 2023) as a flat JSON list, one file per subset: each record an image and two
captions, ``label`` naming the one the image shows: ``{"image", "caption0", "caption1", "label"}``.

Read as pair items (the caption the image shows first, the other as its negative); written back in
the same layout, each pair in the caption order it was read in.
"""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

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
from foil_studio.data.reading import BadInputError, check_count, read_json

FIELDS = ("image", "caption0", "caption1")


def parse_eqben(path: Path) -> Parsed:
    """An EqBen JSON file, or a folder of them (one per subset, its name the category)."""
    parsed = Parsed("eqben", "eqben")
    for file in json_files(path):
        records = read_json(file)
        if not isinstance(records, list):
            raise BadInputError(file, None, f"expected a list of records, got {type(records).__name__}")
        for row, record in enumerate(records):
            require_keys(record, FIELDS, file, row)
            label = check_count(record.get("label"), file, row, "label", below=2, meaning="the caption shown")
            captions = (record[f"caption{label}"], record[f"caption{1 - label}"])
            item = make_item(
                file,
                row,
                kind="pair",
                category=file.stem,
                source_id=f"{file.stem}/{row}",
                captions=captions,
                images=(record["image"],),
                meta={"label": label},
            )
            parsed.add(item, file, row)
    return parsed


def write_eqben(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """One file per category, each pair in the caption order it was read in (label 0 otherwise)."""
    files: dict[str, list[dict[str, object]]] = {}
    for item in items:
        label = int(item["meta"].get("label", 0))
        captions = list(item["captions"]) if label == 0 else list(reversed(item["captions"]))
        record = {"image": item["images"][0], "caption0": captions[0], "caption1": captions[1], "label": label}
        files.setdefault(item["category"], []).append(record)
    return write_json_files(out, files)


COLOURS = {"red": (220, 30, 30), "blue": (30, 60, 220), "green": (30, 180, 60)}


def write_eqben_source(folder: Path) -> Path:
    """A small subset file (`eqbensd.json`) with its images: squares of one colour each, the caption
    naming the colour shown and the other a colour not shown (the label alternates)."""
    (folder / "images").mkdir(parents=True, exist_ok=True)
    records = []
    for n, (shown, other) in enumerate([("red", "blue"), ("blue", "green"), ("green", "red")] * 2):
        Image.new("RGB", (16, 16), COLOURS[shown]).save(folder / "images" / f"{n}.png")
        right, wrong = f"a {shown} square", f"a {other} square"
        label = n % 2
        captions = (right, wrong) if label == 0 else (wrong, right)
        records.append({"image": f"images/{n}.png", "caption0": captions[0], "caption1": captions[1], "label": label})
    (folder / "eqbensd.json").write_text(json.dumps(records, indent=2))
    return folder / "eqbensd.json"


EQBEN = Format(
    "eqben",
    "EqBen's JSON list per subset: `{image, caption0, caption1, label}`, `label` the caption the image shows",
    "./foil import eqben eqben/eqbensd.json --images eqben",
    parse_eqben,
    write_eqben,
    writes=("pair",),
    write_source=write_eqben_source,
)

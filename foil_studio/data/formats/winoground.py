"""Winoground (Thrush et al., CVPR 2022): two images and two captions with the same words in
another order, each caption belonging to one image. ``examples.jsonl`` holds one example per
line (``id, image_0, image_1, caption_0, caption_1, tag, secondary_tag, num_main_preds,
collapsed_tag``); images are ``{image}.png`` under ``--images``.

Examples are ``group`` items scored with the functions of BiVLC's I2T, T2I and Group, which are
Winoground's text, image and group scores (both images pick their caption; both captions pick
their image; both). The category is the collapsed tag (Object, Relation, Both), as the paper's
tables; the fine tag, secondary tag and number of main predicates are kept in ``meta``. The Hub's
copy (``facebook/winoground``, `import hf`) holds the same fields with both images embedded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from foil_studio.data.formats.base import (
    ExportContext,
    Format,
    HubLayout,
    Parsed,
    StoredItem,
    image_ref,
    json_lines,
    make_item,
    require_keys,
)
from foil_studio.data.items import Item
from foil_studio.data.reading import check_count, check_id

WINOGROUND_FIELDS = ("image_0", "image_1", "caption_0", "caption_1", "collapsed_tag")
KEPT = ("tag", "secondary_tag", "num_main_preds")


def parse_winoground(path: Path) -> Parsed:
    """`examples.jsonl` (or a folder holding it): one group item per example."""
    file = path / "examples.jsonl" if path.is_dir() else path
    parsed = Parsed("winoground", "winoground")
    for number, record in json_lines(file):
        require_keys(record, WINOGROUND_FIELDS, file, number)
        images = tuple(f"{record[k].strip()}.png" for k in ("image_0", "image_1"))
        parsed.add(_group(record, images, file, number, str(number - 1)), file, number)
    return parsed


def add_hub_examples(parsed: Parsed, category: str | None, rows: list[Any], file: Path) -> None:
    """facebook/winoground's rows: an example's fields with both images in the table; the category is
    each row's collapsed tag."""
    for number, row in enumerate(rows, start=1):
        require_keys(row, ("caption_0", "caption_1", "collapsed_tag"), file, number)
        images = tuple(image_ref(parsed, row.get(k), file, number) for k in ("image_0", "image_1"))
        parsed.add(_group(row, images, file, number, str(number - 1)), file, number)


def _group(record: dict[str, Any], images: tuple[str, ...], file: Path, number: int, default_id: str) -> Item:
    """One example as a group item (its id, or `default_id` where it has none)."""
    key = check_id(record["id"], file, number, "id") if "id" in record else default_id
    return make_item(
        file,
        number,
        kind="group",
        category=record["collapsed_tag"],
        source_id=key,
        captions=(record["caption_0"], record["caption_1"]),
        images=images,
        meta=_kept(record, file, number),
    )


def _kept(record: dict[str, Any], file: Path, number: int) -> dict[str, Any]:
    """The tags and the number of main predicates (a whole number) the example carries."""
    kept = {k: record[k] for k in KEPT if k in record}
    if "num_main_preds" in kept:
        kept["num_main_preds"] = check_count(kept["num_main_preds"], file, number, "num_main_preds")
    return kept


def write_winoground(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """`examples.jsonl`, one example per item, images named without their `.png`."""
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for item in items:
        key = item["source_id"]
        record: dict[str, Any] = {"id": int(key) if key.isdigit() else key}
        record.update({f"image_{n}": _stem(path) for n, path in enumerate(item["images"])})
        record.update({f"caption_{n}": caption for n, caption in enumerate(item["captions"])})
        record.update({**{k: item["meta"][k] for k in KEPT if k in item["meta"]}, "collapsed_tag": item["category"]})
        lines.append(json.dumps(record, ensure_ascii=False))
    (out / "examples.jsonl").write_text("\n".join(lines) + "\n")
    return ["examples.jsonl"]


def _stem(path: str) -> str:
    return path[:-4] if path.endswith(".png") else path


def write_winoground_source(folder: Path, n: int = 6) -> Path:
    """A small `examples.jsonl` (`n` examples over the three collapsed tags, no images) in `folder`."""
    tags = ("Object", "Relation", "Both")
    lines = [
        json.dumps(
            {
                "id": i,
                "image_0": f"ex_{i}_img_0",
                "image_1": f"ex_{i}_img_1",
                "caption_0": f"a dog bites a man {i}",
                "caption_1": f"a man bites a dog {i}",
                "tag": "Noun",
                "secondary_tag": "Symbolic" if i == 0 else "",
                "num_main_preds": 1 + i % 2,
                "collapsed_tag": tags[i % 3],
            }
        )
        for i in range(n)
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "examples.jsonl").write_text("\n".join(lines) + "\n")
    return folder / "examples.jsonl"


WINOGROUND = Format(
    "winoground",
    "`examples.jsonl` (`id, image_0, image_1, caption_0, caption_1, tag, secondary_tag, num_main_preds, "
    "collapsed_tag`), images `{image}.png`; category = collapsed tag; text, image and group scores",
    "./foil import winoground winoground/data/examples.jsonl --images winoground/data/images",
    parse_winoground,
    write_winoground,
    writes=("group",),
    metric_names={"i2t": "text", "t2i": "image", "ipos2t": None, "ineg2t": None, "tpos2i": None, "tneg2i": None},
    ties_because="Winoground's scores compare with a strict >: a tie is wrong",
    write_source=write_winoground_source,
    hub_layouts=(
        HubLayout(
            frozenset(WINOGROUND_FIELDS), add_hub_examples, hub_ids=("facebook/winoground",), rows_name_category=True
        ),
    ),
)

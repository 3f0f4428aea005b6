"""ARO (Yuksekgonul et al. 2023): VG-Relation and VG-Attribution pairs, each cropped to its
bounding box when scored.

The Hub's copies (``gowitheflow/ARO-Visual-Relation``, ``gowitheflow/ARO-Visual-Attribution``,
`import hf`) embed each row's image with its box as ``bbox {x, y, w, h}``. Whether that image is the
whole Visual Genome picture or already the box is read off its size, row by row: the box's size
(within a pixel) is the crop, scored as it is; an image that holds the whole box is cropped to it
when scored, as ARO's loader does; any other size is refused. A row's id is its place in the copy
under the authors' file name (``visual_genome_relation/1``...), as their JSON's records.
"""

from __future__ import annotations

import dataclasses
import io
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
    json_files,
    make_item,
    require_keys,
    write_json_files,
)
from foil_studio.data.items import Item
from foil_studio.data.reading import BadInputError, check_id, check_number, read_json

BOX = ("bbox_x", "bbox_y", "bbox_w", "bbox_h")
SIZES = ("bbox_w", "bbox_h")  # a box's width and height: never negative


def parse_aro(path: Path) -> Parsed:
    """ARO's VG-Relation / VG-Attribution JSON; the bounding box crops the image when scored."""
    parsed = Parsed("aro", "aro")
    for file in json_files(path):
        records = read_json(file)
        if not isinstance(records, list):
            raise BadInputError(file, None, "expected a list of ARO items")
        for number, record in enumerate(records, start=1):
            require_keys(record, ("true_caption", "false_caption", "image_path"), file, number)
            parsed.add(_aro_pair(record, file, number), file, number)
    return parsed


def add_hub_pairs(parsed: Parsed, category: str | None, rows: list[Any], file: Path) -> None:
    """A Hub copy's rows: `{image, true_caption, false_caption, bbox {x, y, w, h}}` and a
    `relation_name` (VG-Relation) or two `attributes` (VG-Attribution)."""
    for number, row in enumerate(rows, start=1):
        require_keys(row, ("true_caption", "false_caption"), file, number)
        box = row.get("bbox")
        if not isinstance(box, dict) or not {"x", "y", "w", "h"} <= box.keys():
            raise BadInputError(file, number, f"bbox is {box!r}; expected {{x, y, w, h}}")
        image = row.get("image")
        record = {
            **row,
            "image_path": image_ref(parsed, image, file, number),
            **{f"bbox_{k}": box[k] for k in ("x", "y", "w", "h")},
        }
        stem = "visual_genome_relation" if "relation_name" in row else "visual_genome_attribution"
        pair = _aro_pair(record, file, number, source_id=f"{stem}/{number}")
        if _is_the_crop(image, pair.meta["bbox"], file, number):
            pair = dataclasses.replace(pair, meta={**pair.meta, "bbox": [], "hub_bbox": pair.meta["bbox"]})
        parsed.add(pair, file, number)


def _is_the_crop(image: Any, bbox: list[float], file: Path, number: int) -> bool:
    """Whether an embedded image is its box already (its size the box's, within a pixel), not the
    whole picture that holds the box; refused when it is neither. An image given by path is the
    whole picture, as in ARO's own files."""
    if not (isinstance(image, dict) and image.get("bytes")):
        return False
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(bytes(image["bytes"]))) as opened:
            width, height = opened.size
    except (UnidentifiedImageError, OSError) as error:
        raise BadInputError(file, number, f"image cannot be read ({error})") from None
    x, y, w, h = bbox
    if abs(width - w) <= 1 and abs(height - h) <= 1:
        return True
    if width >= x + w - 1 and height >= y + h - 1:
        return False
    raise BadInputError(
        file,
        number,
        f"image is {width}x{height}, neither its box {w:g}x{h:g} nor a picture holding the box at ({x:g}, {y:g}); "
        "expected one or the other",
    )


def _aro_pair(record: dict[str, Any], file: Path, number: int, source_id: str | None = None) -> Item:
    if isinstance(record.get("relation_name"), str):
        category = record["relation_name"]
    elif isinstance(record.get("attributes"), list) and len(record["attributes"]) == 2:
        category = "_".join(map(str, record["attributes"]))
    else:
        raise BadInputError(file, number, "expected a 'relation_name' or a two-element 'attributes' list")
    if missing := [k for k in BOX if k not in record]:
        raise BadInputError(
            file, number, f"{', '.join(missing)} missing; expected numeric bbox_x, bbox_y, bbox_w, bbox_h"
        )
    bbox = [check_number(record[k], file, number, k, at_least=0 if k in SIZES else None) for k in BOX]
    return make_item(
        file,
        number,
        kind="pair",
        category=category,
        source_id=source_id or f"{file.stem}/{number}",
        captions=(record["true_caption"], record["false_caption"]),
        images=(record["image_path"],),
        meta={
            "bbox": bbox,
            "image_id": check_id(record["image_id"], file, number, "image_id") if "image_id" in record else "",
            **(
                {"attributes": [str(a) for a in record["attributes"]]}
                if "relation_name" not in record
                else {"relation_name": category}
            ),
        },
    )


def write_aro(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """One JSON list per source file (`visual_genome_relation.json`...), records as ARO writes them."""
    files: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        meta = item["meta"]
        x, y, w, h = meta.get("bbox") or (0.0, 0.0, 0.0, 0.0)
        record: dict[str, Any] = {
            "image_id": meta.get("image_id", ""),
            "image_path": (item["images"] or [""])[0],
            "bbox_x": x,
            "bbox_y": y,
            "bbox_w": w,
            "bbox_h": h,
            "true_caption": item["captions"][0],
            "false_caption": item["captions"][1],
        }
        if isinstance(meta.get("attributes"), list):
            record["attributes"] = meta["attributes"]
        else:
            record["relation_name"] = meta.get("relation_name", item["category"])
        files.setdefault(item["source_id"].rsplit("/", 1)[0], []).append(record)
    return write_json_files(out, files)


def write_aro_source(folder: Path) -> Path:
    """A small VG-Relation / VG-Attribution file (one record of each) in `folder`."""
    records = [
        {
            "image_id": "7",
            "image_path": "7.jpg",
            "bbox_x": 1,
            "bbox_y": 2,
            "bbox_w": 30,
            "bbox_h": 40,
            "true_caption": "the horse is eating the grass",
            "false_caption": "the grass is eating the horse",
            "relation_name": "eating",
        },
        {
            "image_id": "8",
            "image_path": "8.jpg",
            "bbox_x": 0,
            "bbox_y": 0,
            "bbox_w": 5.5,
            "bbox_h": 6,
            "true_caption": "the paved road and the white house",
            "false_caption": "the white road and the paved house",
            "attributes": ["paved", "white"],
        },
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "visual_genome_mixed.json").write_text(json.dumps(records))
    return folder / "visual_genome_mixed.json"


ARO = Format(
    "aro",
    "VG-Relation / VG-Attribution with bounding boxes; category = relation or attribute pair",
    "./foil import aro visual_genome_relation.json --images vg/images",
    parse_aro,
    write_aro,
    writes=("pair",),
    metric_names={"accuracy_macro": "macro_accuracy"},
    ties="wrong",
    ties_because="ARO takes the argmax over [false caption, true caption]: a tie picks the false one",
    write_source=write_aro_source,
    hub_layouts=(
        HubLayout(
            frozenset({"image", "true_caption", "false_caption", "bbox"}),
            add_hub_pairs,
            hub_ids=("gowitheflow/ARO-Visual-Relation", "gowitheflow/ARO-Visual-Attribution"),
            rows_name_category=True,
        ),
    ),
)

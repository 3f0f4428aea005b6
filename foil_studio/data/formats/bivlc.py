"""BiVLC (Miranda et al. 2024): groups of two images and two captions, the candidate images
generated for each negative caption, and the authors' per-instance results. The authors' Hub copy
(``imirandam/BiVLC``, `import hf`) is the instances' table with both images embedded."""

from __future__ import annotations

import csv
import shutil
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
    make_item,
    model_from_stem,
    read_bool,
    require_keys,
    table_rows,
)
from foil_studio.data.images import existing_image
from foil_studio.data.items import Item, category_key
from foil_studio.data.reading import check_text, read_csv_rows

BIVLC_SCORE_COLUMNS = {
    "text_score_i0": "ipos2t",
    "text_score_i1": "ineg2t",
    "image_score_c0": "tpos2i",
    "image_score_c1": "tneg2i",
    "text_score": "i2t",
    "image_score": "t2i",
    "group_score": "group",
}


def bivlc_type(category: str) -> str:
    """The type of a BiVLC category, which is `{type}_{subtype}` (`category_key`).

    >>> bivlc_type("replace_obj")
    'replace'
    """
    return category.split("_")[0]


def parse_bivlc_results(path: Path) -> Parsed:
    """BiVLC's per-instance results: the four directional scores and their combinations."""
    model = model_from_stem(path, "BiVLC_")
    parsed = Parsed("bivlc", "bivlc", run=RunSpec(model, "groups", model))
    columns = ("caption", "negative_caption", "type", "subtype", *BIVLC_SCORE_COLUMNS)
    for number, row in read_csv_rows(path, columns):
        item = _bivlc_group(row, (), path, number)
        outcome = {key: read_bool(row[col], path, number, col) for col, key in BIVLC_SCORE_COLUMNS.items()}
        parsed.add(item, path, number, outcome)
    return parsed


def _bivlc_group(row: dict[str, Any], images: tuple[str, ...], file: Path, number: int) -> Item:
    category = category_key(str(row["type"]), str(row["subtype"]))
    return make_item(
        file,
        number,
        kind="group",
        category=category,
        source_id=f"{category}/{number}",
        captions=(row["caption"], row["negative_caption"]),
        images=images,
        meta={"type": str(row["type"]).lower(), "subtype": str(row["subtype"]).lower()},
    )


BIVLC_COLUMNS = ("caption", "negative_caption", "type", "subtype", "image", "negative_image")


def parse_bivlc(path: Path) -> Parsed:
    """BiVLC instances from CSV or parquet; images as relative paths or embedded bytes."""
    parsed = Parsed("bivlc", "bivlc")
    for number, row in table_rows(path, BIVLC_COLUMNS):
        images = (image_ref(parsed, row["image"], path, number), image_ref(parsed, row["negative_image"], path, number))
        parsed.add(_bivlc_group(row, images, path, number), path, number)
    return parsed


def add_hub_instances(parsed: Parsed, category: str | None, rows: list[Any], file: Path) -> None:
    """imirandam/BiVLC's rows (its test split, shards in order): as `parse_bivlc` reads the same
    table from one parquet file, rows numbered from 2, the category each row's type and subtype."""
    for number, row in enumerate(rows, start=2):
        require_keys(row, ("caption", "negative_caption", "type", "subtype"), file, number)
        images = (
            image_ref(parsed, row.get("image"), file, number),
            image_ref(parsed, row.get("negative_image"), file, number),
        )
        parsed.add(_bivlc_group(row, images, file, number), file, number)


def parse_bivlc_candidates(path: Path) -> Parsed:
    """`BiVLC_negative_imgs.csv`: per negative caption, the four generated candidate images."""
    candidate_columns = tuple(f"hn_img_{i}" for i in range(4))
    columns = ("filename", "caption", "negative_caption", "type", "subtype", *candidate_columns)
    parsed = Parsed("bivlc-candidates", "bivlc-candidates")
    for number, row in read_csv_rows(path, columns):
        category = category_key(row["type"], row["subtype"])
        check_text(row["caption"], path, number, "caption")
        item = make_item(
            path,
            number,
            kind="candidates",
            category=category,
            source_id=f"{category}/{row.get('index') or number}",
            captions=(row["negative_caption"],),
            images=tuple(row[c] for c in candidate_columns),
            meta={"positive_caption": row["caption"], "source_image": row["filename"]},
        )
        parsed.add(item, path, number)
    return parsed


def write_bivlc(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """BiVLC's layout: `bivlc.csv` (caption, negative_caption, type, subtype, image, negative_image)
    with the images copied to `images/` (a missing image keeps its name and is not copied)."""
    (out / "images").mkdir(parents=True, exist_ok=True)
    with (out / "bivlc.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["caption", "negative_caption", "type", "subtype", "image", "negative_image"])
        writer.writeheader()
        for item in items:
            names = [_copy_image(context.image_root, reference, out / "images") for reference in item["images"]]
            type_, _, subtype = item["category"].partition("_")
            writer.writerow(
                {
                    "caption": item["captions"][0],
                    "negative_caption": item["captions"][1],
                    "type": type_,
                    "subtype": subtype,
                    "image": names[0],
                    "negative_image": names[1],
                }
            )
    return ["bivlc.csv", "images/"]


def _copy_image(root: Path | None, reference: str, folder: Path) -> str:
    source = existing_image(root, reference)
    name = reference.replace("/", "__")
    if source is not None:
        shutil.copyfile(source, folder / name)
    return f"images/{name}"


def write_bivlc_source(folder: Path) -> Path:
    """A small BiVLC parquet in `folder`, its images embedded as bytes as on Hugging Face."""
    import io

    import pandas as pd
    from PIL import Image

    def png(shade: int) -> dict[str, Any]:
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), (shade, 100, 200 - shade)).save(buffer, format="PNG")
        return {"bytes": buffer.getvalue(), "path": f"{shade}.png"}

    rows = [
        {
            "caption": f"a dog {n} on a mat",
            "negative_caption": f"a mat {n} on a dog",
            "type": "swap",
            "subtype": "obj",
            "image": png(40 * n),
            "negative_image": png(40 * n + 20),
        }
        for n in range(3)
    ]
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(folder / "bivlc_test.parquet")
    return folder / "bivlc_test.parquet"


BIVLC = Format(
    "bivlc",
    "BiVLC instances (CSV or parquet): `caption, negative_caption, type, subtype, image, negative_image`, images as "
    "paths under `--images` or embedded bytes",
    "./foil import bivlc bivlc_test.parquet",
    parse_bivlc,
    write_bivlc,
    writes=("group",),
    ties_because="BiVLC compares each pair of scores with a strict >",
    category_types=bivlc_type,
    write_source=write_bivlc_source,
    renames_images=True,
    hub_layouts=(
        HubLayout(frozenset(BIVLC_COLUMNS), add_hub_instances, hub_ids=("imirandam/BiVLC",), rows_name_category=True),
    ),
)
BIVLC_RESULTS = Format(
    "bivlc-results",
    "BiVLC's per-instance results (the 7 scores), a run; creates the 2,933 groups if absent",
    "./foil import bivlc-results results/BiVLC_ViT-B-32.csv",
    parse_bivlc_results,
    category_types=bivlc_type,
)
BIVLC_CANDIDATES = Format(
    "bivlc-candidates",
    "four generated images per negative caption",
    "./foil import bivlc-candidates BiVLC_negative_imgs.csv --images generated/",
    parse_bivlc_candidates,
    category_types=bivlc_type,
)

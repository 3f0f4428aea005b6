"""Writing items back out in the layouts the field already uses (SugarCrepe, BiVLC), and zipping
a folder for a download. Exports that carry model results live in ``analysis/exports.py``."""

from __future__ import annotations

import csv
import io
import json
import shutil
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from data.images import existing_image


def write_sugarcrepe(items: list[dict[str, Any]], out: Path) -> list[str]:
    """SugarCrepe's layout: one `{category}.json` per category, `{id: {filename, caption, negative_caption}}`.

    Ids are the part of each item's source id after the last "/", as the importer made them.
    """
    out.mkdir(parents=True, exist_ok=True)
    by_category: dict[str, dict[str, Any]] = defaultdict(dict)
    for item in items:
        key = item["source_id"].rsplit("/", 1)[-1]
        by_category[item["category"]][key] = {
            "filename": (item["images"] or [""])[0], "caption": item["captions"][0], "negative_caption": item["captions"][1],
        }
    for category, records in by_category.items():
        (out / f"{category}.json").write_text(json.dumps(records, indent=2, ensure_ascii=False))
    return sorted(f"{c}.json" for c in by_category)


def write_bivlc(items: list[dict[str, Any]], image_root: Path | None, out: Path) -> list[str]:
    """BiVLC's layout: `bivlc.csv` (caption, negative_caption, type, subtype, image, negative_image)
    with the images copied to `images/` (a missing image keeps its name and is not copied)."""
    (out / "images").mkdir(parents=True, exist_ok=True)
    with (out / "bivlc.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["caption", "negative_caption", "type", "subtype", "image", "negative_image"])
        writer.writeheader()
        for item in items:
            names = [_copy_image(image_root, reference, out / "images") for reference in item["images"]]
            type_, _, subtype = item["category"].partition("_")
            writer.writerow({"caption": item["captions"][0], "negative_caption": item["captions"][1], "type": type_,
                             "subtype": subtype, "image": names[0], "negative_image": names[1]})
    return ["bivlc.csv", "images/"]


def _copy_image(root: Path | None, reference: str, folder: Path) -> str:
    source = existing_image(root, reference)
    name = reference.replace("/", "__")
    if source is not None:
        shutil.copyfile(source, folder / name)
    return f"images/{name}"


def zip_folder(folder: Path) -> bytes:
    """Every file under `folder` in one zip archive (paths relative to it), for a download button."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            bundle.write(path, path.relative_to(folder).as_posix())
    return archive.getvalue()

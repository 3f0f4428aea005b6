"""Writing items back out in the layouts the field already uses."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any


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

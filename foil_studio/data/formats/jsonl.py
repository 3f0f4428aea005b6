"""The generic formats: JSONL (read and written, one item per line, with every run's per-item
results when written) and parquet (written: one row per item, a column pair per run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from foil_studio.data.formats.base import ExportContext, Format, Parsed, StoredItem, json_lines, make_item, require_keys
from foil_studio.data.items import Item
from foil_studio.data.paths import safe_name
from foil_studio.data.reading import BadInputError, check_id


def parse_jsonl(path: Path) -> Parsed:
    """The generic format: one object per line.

    Keys: ``kind`` (pair, triple, group, retrieval, candidates), ``category``, ``id``,
    ``captions`` (list), ``images`` (list of paths under the image root, may be empty), and
    optional ``truth`` and ``meta`` objects. List order follows ``data/items.py``.
    """
    parsed = Parsed("jsonl", path.stem)
    for number, record in json_lines(path):
        parsed.add(_jsonl_item(record, path, number), path, number)
    return parsed


def _jsonl_item(record: Any, file: Path, number: int) -> Item:
    require_keys(record, ("kind", "category"), file, number)
    captions, images = record.get("captions"), record.get("images", [])
    if not isinstance(captions, list) or not isinstance(images, list):
        raise BadInputError(file, number, "'captions' and 'images' must be lists")
    return make_item(
        file,
        number,
        kind=record["kind"],
        category=record["category"],
        source_id=check_id(record["id"], file, number, "id") if "id" in record else str(number),
        captions=tuple(captions),
        images=tuple(images),
        truth=record.get("truth", {}),
        meta=record.get("meta", {}),
    )


def write_jsonl(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """`{dataset}.jsonl`: the generic import format plus a `results` object per item (run ->
    {correct, scores}); `./foil import jsonl` reads it back."""
    path, results = out / f"{safe_name(context.dataset)}.jsonl", context.results
    with path.open("w", encoding="utf-8") as handle:
        for item in items:
            record = {
                "kind": item["kind"],
                "category": item["category"],
                "id": item["source_id"],
                "captions": item["captions"],
                "images": item["images"],
                "truth": item["truth"],
                "meta": item["meta"],
                "results": results.get(item["id"], {}),
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return [path.name]


def write_parquet(items: list[StoredItem], out: Path, context: ExportContext) -> list[str]:
    """`{dataset}.parquet`: one row per item, columns `{run}.correct` and `{run}.scores` per run."""
    path, results = out / f"{safe_name(context.dataset)}.parquet", context.results
    runs = sorted({run for per_item in results.values() for run in per_item})
    frame = pd.DataFrame(
        {
            "id": [i["source_id"] for i in items],
            "kind": [i["kind"] for i in items],
            "category": [i["category"] for i in items],
            "captions": [i["captions"] for i in items],
            "images": [i["images"] for i in items],
            "truth": [json.dumps(i["truth"]) for i in items],
            "meta": [json.dumps(i["meta"]) for i in items],
        }
    )
    for run in runs:
        frame[f"{run}.correct"] = pd.array(
            [results.get(i["id"], {}).get(run, {}).get("correct") for i in items], dtype="boolean"
        )
        frame[f"{run}.scores"] = [json.dumps(results.get(i["id"], {}).get(run, {}).get("scores")) for i in items]
    frame.to_parquet(path, index=False)
    return [path.name]


def sample_jsonl(folder: Path) -> Path:
    """A small JSONL file in `folder` with one item of every item kind."""
    records = [
        {
            "kind": "pair",
            "category": "swap_att",
            "id": "1",
            "captions": ["a red cube", "a blue cube"],
            "images": ["1.jpg"],
            "truth": {"negative": "false"},
        },
        {
            "kind": "triple",
            "category": "rel",
            "id": "2",
            "captions": ["a on b", "b on a", "b under a"],
            "images": ["2.jpg"],
            "meta": {"bbox": [1, 2, 3, 4]},
        },
        {
            "kind": "paraphrase",
            "category": "swap_obj",
            "id": "6",
            "captions": ["a on b", "b on a", "b is under a"],
            "images": ["6.jpg"],
        },
        {
            "kind": "group",
            "category": "replace_obj",
            "id": "3",
            "captions": ["a cat", "a dog"],
            "images": ["3a.jpg", "3b.jpg"],
        },
        {
            "kind": "retrieval",
            "category": "prod_swap_c04",
            "id": "4",
            "captions": ["x y", "y x", "x x"],
            "images": ["4.jpg"],
        },
        {
            "kind": "candidates",
            "category": "replace_att",
            "id": "5",
            "captions": ["a green bus"],
            "images": ["5a.png", "5b.png", "5c.png"],
            "truth": {"valid": [False, True, True], "best": 1},
        },
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mine.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder / "mine.jsonl"


JSONL = Format(
    "jsonl",
    "generic: one object per line, see below",
    "./foil import jsonl mine.jsonl --images imgs/",
    parse_jsonl,
    write_jsonl,
    carries_results=True,
    sample=sample_jsonl,
)
PARQUET = Format(
    "parquet",
    "one row per item with every run's decision and scores (written only)",
    write=write_parquet,
    carries_results=True,
)

"""The generic formats: JSONL (read and written, one item per line, with every run's per-item
results when written) and parquet (written: one row per item, a column pair per run)."""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from foil_studio.data.formats.base import ExportContext, Format, Parsed, StoredItem, json_lines, make_item, require_keys
from foil_studio.data.item_kinds import item_kind
from foil_studio.data.items import Item
from foil_studio.data.paths import safe_name
from foil_studio.data.reading import BadInputError, check_id


def parse_jsonl(path: Path) -> Parsed:
    """The generic format: one object per line.

    Keys: ``kind`` (pair, triple, group, retrieval, candidates), ``category``, ``id``,
    ``captions`` (list), ``images`` (list of paths under the image root, may be empty), and
    optional ``truth`` and ``meta`` objects. List order follows ``data/items.py``. An optional
    ``results`` object (run -> {correct, scores}, as `export --format jsonl` writes it) brings each
    run's scores back as that run; a run's results without scores (a run imported from a
    benchmark's results file keeps only its decisions) are left, and a warning says how many.
    """
    return next(jsonl_chunks(path, size=None))


CHUNK_ITEMS = 20_000  # items an import holds at once from a streamed file


def streamed_jsonl(path: Path) -> Iterator[Parsed]:
    """The file as an import reads it: chunks of `CHUNK_ITEMS` items."""
    return jsonl_chunks(path, CHUNK_ITEMS)


def jsonl_chunks(path: Path, size: int | None) -> Iterator[Parsed]:
    """`parse_jsonl`'s items read a line at a time, as consecutive chunks of at most `size` items
    (None: the whole file in one); the last chunk holds the file's closing warnings. An empty file
    gives one empty chunk."""
    parsed, left = Parsed("jsonl", path.stem), Counter[str]()
    for number, record in json_lines(path):
        if len(parsed.items) == size:
            yield parsed
            parsed = Parsed("jsonl", path.stem)
        item = _jsonl_item(record, path, number)
        parsed.add(item, path, number)
        _read_results(parsed, left, record.get("results"), item, path, number)
    for run, n in left.items():
        parsed.warn(
            path,
            None,
            f"results of run {run!r} on {n} item(s) left out: they hold a decision but no scores (a run imported "
            "from a benchmark's results file); import that file again to have the run",
        )
    yield parsed


def _read_results(parsed: Parsed, left: Counter[str], results: Any, item: Item, file: Path, row: int) -> None:
    """Keep each run's scores of the item just added (`Parsed.scored_runs`), checked against what its
    item kind's scores are; count a run's result without scores as left."""
    if results is None:
        return
    if not isinstance(results, dict):
        raise BadInputError(
            file, row, f"'results' is {type(results).__name__}; expected an object of run name -> {{correct, scores}}"
        )
    for run, result in results.items():
        if not run.strip() or not isinstance(result, dict):
            raise BadInputError(
                file, row, f"'results' of run {run!r}: expected a run name and an object {{correct, scores}}"
            )
        scores = result.get("scores")
        if scores is None:
            left[run] += 1
            continue
        shape = _score_shape(item)
        if shape is None or not _numbers_of_shape(scores, shape):
            expected = (
                "none: an item without images is scored by no run"
                if shape is None
                else f"{' x '.join(map(str, shape))} finite numbers, as a {item.kind} item's scores are"
            )
            raise BadInputError(file, row, f"'results' of run {run!r}: scores {_shown(scores)}; expected {expected}")
        parsed.scored_runs.setdefault(run, {})[len(parsed.items) - 1] = scores


def _score_shape(item: Item) -> tuple[int, ...] | None:
    """The shape of the scores a run stores for `item` (its item kind's `scores_from`, then its text scores);
    None for an item without images."""
    return _kind_score_shape(item.kind, len(item.images), len(item.captions)) if item.images else None


@functools.cache
def _kind_score_shape(kind_name: str, n_images: int, n_captions: int) -> tuple[int, ...]:
    """The shape of an item kind's scores for so many images and captions, worked out once per
    shape (per item, it was half the time reading an item's scores took)."""
    return item_kind(kind_name).scores_shape(n_images, n_captions)


def _numbers_of_shape(scores: Any, shape: tuple[int, ...]) -> bool:
    """Whether `scores` is nested lists of finite numbers (not booleans) of exactly `shape`."""
    if not shape:
        return isinstance(scores, (int, float)) and not isinstance(scores, bool) and math.isfinite(scores)
    return (
        isinstance(scores, list)
        and len(scores) == shape[0]
        and all(_numbers_of_shape(value, shape[1:]) for value in scores)
    )


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
    {correct, scores}); `./foil import jsonl` reads it back, the runs with scores as runs."""
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


def write_jsonl_source(folder: Path) -> Path:
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
    write_source=write_jsonl_source,
    read_chunks=streamed_jsonl,
)
PARQUET = Format(
    "parquet",
    "one row per item with every run's decision and scores (written only)",
    write=write_parquet,
    carries_results=True,
)

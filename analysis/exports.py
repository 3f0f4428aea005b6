"""Exporting a dataset in the field's layouts, or as jsonl/parquet with every run's per-instance
results (decision and raw similarities per item)."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from analysis.inspection import run_table
from analysis.results import UnsupportedRunError
from data import store
from data.exporters import write_bivlc, write_sugarcrepe, zip_folder
from data.paths import safe_name

FORMATS = ("sugarcrepe", "bivlc", "jsonl", "parquet")
_KINDS_OF_FORMAT = {"sugarcrepe": ("pair",), "bivlc": ("group",)}


class ExportError(store.StoreError):
    """A dataset cannot be written in the asked layout."""


def export_dataset(db: sqlite_utils.Database, dataset: str, fmt: str, out: Path) -> dict[str, Any]:
    """Write a dataset in `fmt`; jsonl and parquet carry every run's per-instance results too.

    jsonl is the generic import format (``cli.py import jsonl`` reads it back) with a ``results``
    object per item: run -> {correct, scores}; parquet holds one row per item with columns
    ``{run}.correct`` and ``{run}.scores``.
    """
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; expected one of {FORMATS}")
    row = store.get_dataset(db, dataset)
    items = store.list_items(db, row["id"], limit=1 << 62)
    wrong = sorted({i["kind"] for i in items} - set(_KINDS_OF_FORMAT.get(fmt, {i["kind"] for i in items})))
    if wrong:
        raise ExportError(f"the {fmt} layout holds {' and '.join(_KINDS_OF_FORMAT[fmt])} items; {dataset} has {', '.join(wrong)} items")
    out.mkdir(parents=True, exist_ok=True)
    if fmt == "sugarcrepe":
        files = write_sugarcrepe(items, out)
    elif fmt == "bivlc":
        files = write_bivlc(items, Path(row["image_root"]) if row["image_root"] else None, out)
    else:
        results = per_instance_results(db, dataset)
        target = out / f"{safe_name(dataset)}.{fmt}"
        files = [_write_jsonl(items, results, target) if fmt == "jsonl" else _write_parquet(items, results, target)]
    return {"dataset": dataset, "format": fmt, "n_items": len(items), "runs": sorted(per_instance_runs(db, dataset)), "files": files}


def per_instance_runs(db: sqlite_utils.Database, dataset: str) -> list[str]:
    """Names of the runs of a dataset, in creation order."""
    return [run["run"] for run in store.list_runs(db, dataset)]


def per_instance_results(db: sqlite_utils.Database, dataset: str) -> dict[int, dict[str, dict[str, Any]]]:
    """Item id -> run -> {correct, scores}: each run's decision and raw similarities per item."""
    results: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for run in per_instance_runs(db, dataset):
        columns = store.run_columns(db, store.get_run(db, dataset, run)["id"])
        try:
            table = run_table(columns)
            correct = dict(zip(table["item"].tolist(), table["correct"].tolist()))
        except UnsupportedRunError:  # say, candidate-image scores: no decision, scores only
            correct = {}
        for number, item in enumerate(columns.item_ids.tolist()):
            scores = None if columns.scores is None else _without_padding(columns.scores[number].tolist())
            results[item][run] = {"correct": correct.get(item), "scores": scores}
    return results


def _without_padding(scores: list[Any]) -> list[Any]:
    return [s for s in scores if s == s] if scores and not isinstance(scores[0], list) else scores  # NaN != NaN


def _write_jsonl(items: list[dict[str, Any]], results: dict[int, dict[str, Any]], path: Path) -> str:
    with path.open("w", encoding="utf-8") as handle:
        for item in items:
            record = {"kind": item["kind"], "category": item["category"], "id": item["source_id"], "captions": item["captions"],
                      "images": item["images"], "truth": item["truth"], "meta": item["meta"], "results": results.get(item["id"], {})}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path.name


def _write_parquet(items: list[dict[str, Any]], results: dict[int, dict[str, Any]], path: Path) -> str:
    runs = sorted({run for per_item in results.values() for run in per_item})
    frame = pd.DataFrame({
        "id": [i["source_id"] for i in items], "kind": [i["kind"] for i in items], "category": [i["category"] for i in items],
        "captions": [i["captions"] for i in items], "images": [i["images"] for i in items],
        "truth": [json.dumps(i["truth"]) for i in items], "meta": [json.dumps(i["meta"]) for i in items],
    })
    for run in runs:
        frame[f"{run}.correct"] = pd.array([results.get(i["id"], {}).get(run, {}).get("correct") for i in items], dtype="boolean")
        frame[f"{run}.scores"] = [json.dumps(results.get(i["id"], {}).get(run, {}).get("scores")) for i in items]
    frame.to_parquet(path, index=False)
    return path.name


def export_archive(db: sqlite_utils.Database, dataset: str, fmt: str, folder: Path) -> tuple[dict[str, Any], bytes]:
    """`export_dataset` into a fresh `folder` (an earlier export there is removed), zipped."""
    shutil.rmtree(folder, ignore_errors=True)
    report = export_dataset(db, dataset, fmt, folder)
    return report, zip_folder(folder)

"""Export the benchmark a construction batch leaves behind, with provenance and a protocol paragraph.

Construction rules (BiVLC, SugarCrepe):

* ``validate_negative``: keep items decided "the negative is wrong"; drop false negatives
  ("also true") and items decided "unsure" or left unresolved.
* ``ambiguity`` (made from a ``pick_image`` batch): keep groups where the annotators chose the
  original image; drop those where they chose the generated image or "Both". Candidate sets the
  ``pick_image`` batch dropped (None chosen) are listed in the provenance too.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import sqlite_utils

from annotate.batches import SIMULATED, BatchError, batch_agreement, batch_progress, pick_image_survivors
from annotate.consensus import decisions
from annotate.task_types import REGISTRY
from data import formats, store

# The construction task types: those whose record names the layout of their cleaned benchmark.
CONSTRUCTION_TASKS = tuple(name for name, kind in REGISTRY.items() if kind.clean_format)


def clean_layout(db: sqlite_utils.Database, batch_name: str) -> str | None:
    """The layout a batch's cleaned benchmark is written in: its dataset's own (VALSE, SugarCrepe++...)
    when that format writes every kind of item the dataset holds, else the task type's
    (validate_negative: SugarCrepe's, ambiguity: BiVLC's); None for tasks that clean nothing."""
    batch = store.get_batch(db, batch_name)
    task = REGISTRY[batch["task"]]
    if not task.clean_format:
        return None
    row = store.get_dataset(db, batch["dataset"])
    source = formats.REGISTRY.get(row["source_kind"])
    own = source is not None and source.write is not None and source.writes and set(store.item_kind_counts(db, row["id"])) <= set(source.writes)
    return row["source_kind"] if own else task.clean_format


def export_clean(db: sqlite_utils.Database, batch_name: str, fmt: str | None, out: Path) -> dict[str, Any]:
    """Write the kept items plus provenance.json; return a summary. The layout is `clean_layout`'s;
    `fmt`, if given, must be that one."""
    batch = store.get_batch(db, batch_name)
    if batch["task"] not in CONSTRUCTION_TASKS:
        raise BatchError(f"export-clean needs a {' or '.join(CONSTRUCTION_TASKS)} batch, not {batch['task']}")
    task = REGISTRY[batch["task"]]
    layout = clean_layout(db, batch_name)
    if fmt not in (None, layout):
        raise BatchError(f"a {task.name} batch on {batch['dataset']} leaves a {layout} benchmark, not {fmt}")
    fmt = layout
    outcome = {d.item: d for d in decisions(db, batch_name)}
    items = store.items_by_id(db, outcome)
    kept = [items[i] for i, d in outcome.items() if d.answer in task.keep]
    removed = [
        {"item": i, "source_id": items[i]["source_id"], "batch": batch_name, "decision": d.answer, "votes": d.votes,
         "rule": task.drop_reasons.get(d.answer or "", "unresolved: no majority and no admin decision")}
        for i, d in sorted(outcome.items()) if d.answer not in task.keep
    ]
    removed += _dropped_upstream(db, batch, kept)
    out.mkdir(parents=True, exist_ok=True)
    root = store.get_dataset(db, batch["dataset"])["image_root"]
    written = formats.REGISTRY[str(fmt)].write(kept, out, formats.ExportContext(batch["dataset"], Path(root) if root else None))
    provenance = {
        "batch": batch_name, "task": batch["task"], "dataset": batch["dataset"], "n_decided": len(outcome),
        "n_kept": len(kept), "kept": [{"item": i["id"], "source_id": i["source_id"]} for i in kept],
        "removed": removed, "agreement": _agreement_figures(db, batch_name), "protocol": protocol_paragraph(db, batch_name),
    }
    (out / "provenance.json").write_text(json.dumps(provenance, indent=2, ensure_ascii=False))
    return {"batch": batch_name, "format": fmt, "n_kept": len(kept), "n_removed": len(removed), "files": written}


def _dropped_upstream(db: sqlite_utils.Database, batch: store.BatchRow, kept: list[store.ItemRow]) -> list[dict[str, Any]]:
    """Candidate sets the pick_image batch before an ambiguity batch dropped (None chosen)."""
    sources = {i["meta"].get("from_batch") for i in kept} - {None}
    dropped = []
    for pick in sorted(sources):
        picked = store.get_batch(db, pick)
        survivors = {item["id"] for item, _ in pick_image_survivors(db, pick)}
        answered = {label["item"] for label in store.batch_labels(db, picked["id"]) if not label["is_gold"]}
        dropped += [{"item": i, "batch": pick, "decision": "none", "rule": "no generated image shows the negative caption"} for i in sorted(answered - survivors)]
    return dropped


def _agreement_figures(db: sqlite_utils.Database, batch_name: str) -> dict[str, Any]:
    report = batch_agreement(db, batch_name, n_boot=300)
    keys = ("n_items", "n_labels", "percent_agreement", "cohen_mean", "fleiss", "krippendorff_alpha", "gwet_ac1", "intervals", "undefined")
    return {k: report[k] for k in keys}


def protocol_paragraph(db: sqlite_utils.Database, batch_name: str) -> str:
    """An "annotation protocol" paragraph for a paper's appendix, from the batch's own figures."""
    batch = store.get_batch(db, batch_name)
    progress = batch_progress(db, batch_name)
    labels = store.batch_labels(db, batch["id"])
    per_annotator = Counter(label["annotator"] for label in labels)
    simulated = sum(SIMULATED in (label["flags"] or []) for label in labels)
    seconds = [label["seconds"] for label in labels if label["seconds"] is not None and SIMULATED not in (label["flags"] or [])]
    gold = [row["gold_accuracy"] for row in progress if row["gold_accuracy"] is not None]
    report = batch_agreement(db, batch_name, n_boot=300)
    figures = "; ".join(
        _figure(name, report[key], report["intervals"].get(key), unit)
        for name, key, unit in (("Percent agreement", "percent_agreement", "%"), ("mean Cohen kappa over annotator pairs", "cohen_mean", ""),
                                ("Krippendorff alpha", "krippendorff_alpha", ""), ("Gwet AC1", "gwet_ac1", ""))
    )
    parts = [
        f"{len(progress)} annotators labelled {batch['config']['n_items']} items of {batch['dataset']} "
        f"({batch['task'].replace('_', ' ')}), each item by {batch['config']['overlap']} annotators; "
        f"annotators labelled {min(per_annotator.values(), default=0)}-{max(per_annotator.values(), default=0)} items each.",
        "Option order was randomised for every item and recorded.",
        figures + ".",
        f"Median time per item {statistics.median(seconds):.1f} s." if seconds else "Time per item was not recorded.",
        f"{simulated} of the {len(labels)} labels were simulated (demo answers, not people's; left out of the time)." if simulated else "",
        f"Gold pass rate {100 * sum(g >= batch['config'].get('gold_pass', 60.0) for g in gold) / len(gold):.0f}% of annotators with gold items." if gold else "No gold items.",
    ]
    return " ".join(part for part in parts if part)


def _figure(name: str, value: float | None, interval: tuple[float, float] | None, unit: str = "") -> str:
    if value is None:
        return f"{name} undefined"
    text = f"{name} {value:.2f}{unit}"
    return text + (f" (95% CI {interval[0]:.2f}-{interval[1]:.2f})" if interval else "")

"""What the admin reads off a batch: progress and gold accuracy per annotator, agreement (overall
and per category) and every label as JSONL or CSV."""

from __future__ import annotations

import csv
import io
import json
import statistics
from typing import Any

import sqlite_utils

from foil_studio.annotate.batches import BatchError
from foil_studio.annotate.gold import GOLD_PASS, fails_gold
from foil_studio.annotate.task_types import is_correct, task_type
from foil_studio.data import store

AGREEMENT_BOOTSTRAP, AGREEMENT_SEED = 1000, 0  # behind every agreement interval, wherever it is shown


def batch_progress(db: sqlite_utils.Database, batch_name: str) -> list[dict[str, Any]]:
    """Per annotator: done, remaining, median seconds per item (people's answers, not simulated
    ones), gold accuracy and whether the
    gold answers screen them out (`annotate.gold`'s rule)."""
    batch = store.get_batch(db, batch_name)
    assigned = store.assigned_per_annotator(db, batch["id"])
    labels = store.batch_labels(db, batch["id"])
    items = store.items_by_id(db, {label["item"] for label in labels if label["is_gold"]})
    rows = []
    for name in sorted(assigned):
        answered = [lab for lab in labels if lab["annotator"] == name]
        seconds = [
            lab["seconds"] for lab in answered if lab["seconds"] is not None and not lab["simulated"]
        ]  # a person's time only
        judged = [
            is_correct(batch["task_type"], items[lab["item"]], lab["part"], lab["answer"])
            for lab in answered
            if lab["is_gold"]
        ]
        gold = [g for g in judged if g is not None]
        rows.append(
            {
                "annotator": name,
                "done": len(answered),
                "remaining": assigned[name] - len(answered),
                "median_seconds": statistics.median(seconds) if seconds else None,
                "gold_n": len(gold),
                "gold_accuracy": 100.0 * sum(gold) / len(gold) if gold else None,
                "screened_out": fails_gold(sum(gold), len(gold), float(batch["config"].get("gold_pass", GOLD_PASS))),
            }
        )
    return rows


def batch_agreement(db: sqlite_utils.Database, batch_name: str) -> dict[str, Any]:
    """The `./foil agreement` report of a batch (gold items excluded: they test, not measure).

    Its intervals come from `AGREEMENT_BOOTSTRAP` resamples of items with seed 0, the one setting
    of the page, the CLI, the protocol paragraph and the exports, so a coefficient has one
    interval wherever it is shown (`bootstrap` in the report says which).
    """
    from foil_studio.annotate.agreement import task_agreement

    batch = store.get_batch(db, batch_name)
    labels = [label for label in store.batch_labels(db, batch["id"]) if not label["is_gold"]]
    report = task_agreement(labels, batch["task_type"], n_boot=AGREEMENT_BOOTSTRAP, seed=AGREEMENT_SEED)
    if "by_question" in report:
        report["question_words"] = _question_words(db, batch)
    return {"batch": batch_name, **report, "bootstrap": {"resamples": AGREEMENT_BOOTSTRAP, "seed": AGREEMENT_SEED}}


def _question_words(db: sqlite_utils.Database, batch: store.BatchRow) -> dict[str, str]:
    """Each question of the batch's task in the words of its items ("rank of the negative caption",
    not rank_2): the questions name caption roles, which are the same on every item of a dataset."""
    asked = task_type(batch["task_type"])
    first = store.first_assigned_item(db, batch["id"])
    if asked.question_words is None or first is None:
        return {q: q for q in asked.questions}
    item = store.items_by_id(db, [first])[first]
    return {q: asked.question_words(item, q) for q in asked.questions}


BY_CATEGORY_COEFFICIENTS = ("percent_agreement", "cohen_mean", "krippendorff_alpha", "gwet_ac1")


def agreement_by_category(db: sqlite_utils.Database, batch_name: str) -> list[dict[str, Any]]:
    """Percent agreement, mean Cohen's kappa, Krippendorff's alpha and Gwet's AC1 per item category,
    with the reason of each one undefined there (None)."""
    from foil_studio.annotate.agreement import task_agreement

    batch = store.get_batch(db, batch_name)
    labels = [label for label in store.batch_labels(db, batch["id"]) if not label["is_gold"]]
    rows = []
    for category in sorted({label["category"] for label in labels}):
        report = task_agreement([x for x in labels if x["category"] == category], batch["task_type"], n_boot=0)
        rows.append(
            {
                "category": category,
                "n_items": report["n_items"],
                "percent_agreement": report["percent_agreement"],
                "cohen_mean": report["cohen_mean"],
                "krippendorff_alpha": report["krippendorff_alpha"],
                "gwet_ac1": report["gwet_ac1"],
                "undefined because": "; ".join(
                    f"{key}: {why}" for key, why in report["undefined"].items() if key in BY_CATEGORY_COEFFICIENTS
                ),
            }
        )
    return rows


def export_labels(db: sqlite_utils.Database, batch_name: str, fmt: str) -> str:
    """All labels of a batch as JSONL or CSV text (answers and orders as JSON strings in CSV): the
    rows `store.batch_labels` returns, with every column of the labels table but the batch's id
    (`store.LABEL_ROW_COLUMNS`: the annotator by name, the item with its source id and category)."""
    rows = store.batch_labels(db, store.get_batch(db, batch_name)["id"])
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    if fmt != "csv":
        raise BatchError(f"unknown label format {fmt!r}; expected jsonl or csv")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, store.LABEL_ROW_COLUMNS)
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, **{k: json.dumps(row[k]) for k in ("answer", "displayed_order", "flags")}})
    return buffer.getvalue()

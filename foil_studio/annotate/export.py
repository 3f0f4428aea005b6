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
import random
import shutil
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from foil_studio.annotate.agreement import COEFFICIENT_NAMES, coefficient_rows
from foil_studio.annotate.batch_reports import batch_agreement, batch_progress
from foil_studio.annotate.batches import BatchError
from foil_studio.annotate.consensus import decisions, excluded_annotators
from foil_studio.annotate.construction import pick_image_survivors
from foil_studio.annotate.gold import GOLD_PASS, rule_text
from foil_studio.annotate.task_types import REGISTRY, negative_validation
from foil_studio.data import formats, item_kinds, paths, store
from foil_studio.data.images import resolve_image
from foil_studio.data.plain_text import count_range, figure

# The construction task types: those whose record names the layout of their cleaned benchmark.
CONSTRUCTION_TASKS = tuple(name for name, task_type in REGISTRY.items() if task_type.clean_format)


def clean_layout(db: sqlite_utils.Database, batch_name: str) -> str | None:
    """The layout a batch's cleaned benchmark is written in: its dataset's own (VALSE, SugarCrepe++...)
    when that format writes every item kind the dataset holds, else the task type's
    (validate_negative: SugarCrepe's, ambiguity: BiVLC's); None for tasks that clean nothing."""
    batch = store.get_batch(db, batch_name)
    task_type = REGISTRY[batch["task_type"]]
    if not task_type.clean_format:
        return None
    row = store.get_dataset(db, batch["dataset"])
    source = formats.REGISTRY.get(row["source_format"])
    own = (
        source is not None
        and source.write is not None
        and source.writes
        and set(store.item_kind_counts(db, row["id"])) <= set(source.writes)
    )
    return row["source_format"] if own else task_type.clean_format


def export_clean(db: sqlite_utils.Database, batch_name: str, fmt: str | None, out: Path) -> dict[str, Any]:
    """Write the kept items plus provenance.json; return a summary. The layout is `clean_layout`'s;
    `fmt`, if given, must be that one."""
    batch = store.get_batch(db, batch_name)
    if batch["task_type"] not in CONSTRUCTION_TASKS:
        raise BatchError(f"export-clean needs a {' or '.join(CONSTRUCTION_TASKS)} batch, not {batch['task_type']}")
    task_type = REGISTRY[batch["task_type"]]
    layout = clean_layout(db, batch_name)
    if fmt not in (None, layout):
        raise BatchError(f"a {task_type.name} batch on {batch['dataset']} leaves a {layout} benchmark, not {fmt}")
    fmt = layout
    outcome = {d.item: d for d in decisions(db, batch_name)}
    items = store.items_by_id(db, outcome)
    if any(len(item_kinds.negative_captions(item)) > 1 for item in items.values()):
        raise BatchError(
            f"{batch_name} validated items with several negatives (retrieval items), which no benchmark layout "
            "keeps negative by negative; "
            f"`./foil export {batch['dataset']} --format negclip-csv` writes the validated negatives"
        )
    kept = [items[i] for i, d in outcome.items() if d.answer in task_type.keep]
    removed = [
        {
            "item": i,
            "source_id": items[i]["source_id"],
            "batch": batch_name,
            "decision": d.answer,
            "votes": d.votes,
            "rule": task_type.drop_reasons.get(d.answer or "", "unresolved: no majority and no admin decision"),
        }
        for i, d in sorted(outcome.items())
        if d.answer not in task_type.keep
    ]
    removed += _dropped_upstream(db, batch, kept)
    out.mkdir(parents=True, exist_ok=True)
    root = store.get_dataset(db, batch["dataset"])["image_root"]
    written = formats.REGISTRY[str(fmt)].write_items(
        kept, out, formats.ExportContext(batch["dataset"], Path(root) if root else None)
    )
    provenance = {
        "batch": batch_name,
        "task_type": batch["task_type"],
        "dataset": batch["dataset"],
        "n_decided": len(outcome),
        "n_kept": len(kept),
        "kept": [{"item": i["id"], "source_id": i["source_id"]} for i in kept],
        "removed": removed,
        "gold": _gold_items(db, batch),
        "left_out_of_vote": [
            {"annotator": e.annotator, "reason": e.reason} for e in excluded_annotators(db, batch_name)
        ],
        "agreement": _agreement_figures(db, batch_name),
        "protocol": protocol_paragraph(db, batch_name),
    }
    (out / "provenance.json").write_text(json.dumps(provenance, indent=2, ensure_ascii=False))
    return {"batch": batch_name, "format": fmt, "n_kept": len(kept), "n_removed": len(removed), "files": written}


def _gold_items(db: sqlite_utils.Database, batch: store.BatchRow) -> list[dict[str, Any]]:
    """The batch's gold items (attention checks with known answers): neither kept nor removed by
    a vote, listed so that every item of the batch is accounted for."""
    gold = sorted({a["item_id"] for a in store.batch_assignments(db, batch["id"]) if a["is_gold"]})
    items = store.items_by_id(db, gold)
    return [{"item": i, "source_id": items[i]["source_id"]} for i in gold]


def _dropped_upstream(
    db: sqlite_utils.Database, batch: store.BatchRow, kept: list[store.ItemRow]
) -> list[dict[str, Any]]:
    """Candidate sets the pick_image batch before an ambiguity batch dropped (None chosen)."""
    sources = {str(i["meta"]["from_batch"]) for i in kept if i["meta"].get("from_batch") is not None}
    dropped = []
    for pick in sorted(sources):
        picked = store.get_batch(db, pick)
        survivors = {item["id"] for item, _ in pick_image_survivors(db, pick)}
        answered = {label["item"] for label in store.batch_labels(db, picked["id"]) if not label["is_gold"]}
        dropped += [
            {"item": i, "batch": pick, "decision": "none", "rule": "no generated image shows the negative caption"}
            for i in sorted(answered - survivors)
        ]
    return dropped


def _agreement_figures(db: sqlite_utils.Database, batch_name: str) -> dict[str, Any]:
    report = batch_agreement(db, batch_name)
    keys = (
        "n_items",
        "n_labels",
        "percent_agreement",
        "cohen_mean",
        "fleiss",
        "krippendorff_alpha",
        "gwet_ac1",
        "intervals",
        "undefined",
        "bootstrap",
    )
    return {k: report[k] for k in keys}


def protocol_paragraph(db: sqlite_utils.Database, batch_name: str) -> str:
    """An "annotation protocol" paragraph for a paper's appendix. Every sentence follows from what
    the store holds for the batch: who labelled how much, the order stimuli were shown in (as
    recorded with each label), the agreement figures exactly as the batch page's table shows
    them, time, simulated answers and gold screening."""
    batch = store.get_batch(db, batch_name)
    labels = store.batch_labels(db, batch["id"])
    regular = [label for label in labels if not label["is_gold"]]
    report = batch_agreement(db, batch_name)
    sentences = [
        _who_labelled(batch, labels, regular),
        _stimulus_order(labels),
        _agreement_sentence(report),
        _time_sentence(labels),
        _gold_sentence(db, batch, labels),
    ]
    return " ".join(sentence for sentence in sentences if sentence)


def _who_labelled(batch: store.BatchRow, labels: list[store.LabelRow], regular: list[store.LabelRow]) -> str:
    """Annotators, items, labels per item and per annotator, as stored."""
    annotators = Counter(label["annotator"] for label in labels)
    per_unit = Counter((label["item"], label["part"]) for label in regular)
    items = {label["item"] for label in regular}
    planned = batch["config"]["n_items"]
    n_gold = len({label["item"] for label in labels if label["is_gold"]})
    scope = f"{len(items):,} items" if len(items) + n_gold == planned else f"{len(items):,} of the {planned:,} items"
    asked = batch["task_type"].replace("_", " ")
    if not labels:
        return f"No labels have been stored for this {asked} batch on {batch['dataset']} yet."
    per_item = count_range(min(per_unit.values()), max(per_unit.values())) if per_unit else "0"
    return (
        f"{len(annotators)} annotator{'s' if len(annotators) != 1 else ''} labelled {scope} of {batch['dataset']} "
        f"({asked}); each item was labelled by {per_item} annotator{'s' if per_item != '1' else ''}, "
        f"and each annotator labelled {count_range(min(annotators.values()), max(annotators.values()))} items"
        + (
            f", including {n_gold:,} gold item{'s' if n_gold != 1 else ''} with known answers shown to every annotator."
            if n_gold
            else "."
        )
    )


def _stimulus_order(labels: list[store.LabelRow]) -> str:
    """What the recorded orders show: one fixed order, or shuffled (and how often each occurs)."""
    orders = Counter(tuple(label["displayed_order"] or ()) for label in labels)
    if not orders:
        return ""
    if len(orders) == 1:
        return (
            "Each item's captions and images were shown in the same order on every item (recorded with each label); "
            "the answer options kept fixed positions and keys."
        )
    common, count = orders.most_common(1)[0]
    return (
        "The order of each item's captions or images was shuffled per item and annotator with a recorded seed and "
        f"stored with each label ({len(orders)} different orders among {len(labels):,} labels; the most frequent on "
        f"{figure(100 * count / len(labels), 0)}% of them); the answer options kept fixed positions and keys."
    )


def _agreement_sentence(report: dict[str, Any]) -> str:
    """Every coefficient of the batch page's table, with its interval, in the table's own digits."""
    if not report["n_labels"]:
        return ""
    parts = []
    for row in coefficient_rows(report):
        if row["value"] is None:
            parts.append(f"{row['coefficient']} undefined ({row['undefined because']})")
            continue
        unit = "%" if row["coefficient"] == COEFFICIENT_NAMES["percent_agreement"] else ""
        parts.append(
            f"{row['coefficient']} {figure(row['value'])}{unit}"
            + (f" (95% CI {row['95% interval']})" if row["95% interval"] else "")
        )
    boot = report["bootstrap"]
    return (
        f"Agreement on {report['n_items']:,} items ({report['level']} scale): "
        + "; ".join(parts)
        + f"; intervals from {boot['resamples']:,} bootstrap resamples of items (seed {boot['seed']})."
    )


def _time_sentence(labels: list[store.LabelRow]) -> str:
    """Median seconds per item of people's answers; simulated answers said and left out."""
    simulated = sum(label["simulated"] for label in labels)
    seconds = [label["seconds"] for label in labels if label["seconds"] is not None and not label["simulated"]]
    timing = (
        f"Median time per item {figure(statistics.median(seconds), 1)} s."
        if seconds
        else "No time per item was recorded from a person."
    )
    if simulated:
        timing += (
            f" {simulated:,} of the {len(labels):,} labels were simulated (demo answers from the ground truth, not "
            "people's) and are left out of the time."
        )
    return timing


def _gold_sentence(db: sqlite_utils.Database, batch: store.BatchRow, labels: list[store.LabelRow]) -> str:
    """Gold screening: how many passed, and who was left out of the vote and why."""
    progress = [row for row in batch_progress(db, batch["name"]) if row["gold_n"]]
    if not progress:
        return (
            "No gold items were answered." if any(label["is_gold"] for label in labels) else "No gold items were used."
        )
    out = excluded_annotators(db, batch["name"])
    rule = rule_text(float(batch["config"].get("gold_pass", GOLD_PASS)))
    sentence = (
        f"{len(progress) - len(out)} of the {len(progress)} annotators who answered gold items passed the gold "
        f"screening ({rule})"
    )
    if not out:
        return sentence + "."
    return sentence + "; left out of the vote: " + "; ".join(f"{e.annotator} ({e.reason})" for e in out) + "."


# --- training sets from validated negatives ----------------------------------------------------

NEGCLIP_FILE = "negclip.tsv"
NEGCLIP_IMAGES_PER_ROW = 3


def validated_negatives(db: sqlite_utils.Database, dataset: str) -> tuple[dict[int, list[int]], list[str]]:
    """The validated negatives of `dataset`'s items (item id -> the parts kept, part k being
    negative k): those decided by `export-clean`'s keep rule (the negative is wrong for the image)
    in every validate_negative batch that decided them. Returns them with the batches read;
    refused when there is no such batch."""
    task_type = negative_validation()
    batches = [
        b["name"] for b in store.list_batches(db) if b["dataset"] == dataset and b["task_type"] == task_type.name
    ]
    if not batches:
        raise BatchError(
            f"{dataset} has no {task_type.name} batch, so no negative of it is validated yet "
            f"(./foil batch create {dataset} --task-type {task_type.name} ..., or Benchmark health's sample)"
        )
    kept: dict[tuple[int, int], bool] = {}
    for batch in batches:
        for decision in decisions(db, batch):
            unit = (decision.item, decision.part)
            kept[unit] = kept.get(unit, True) and decision.answer in task_type.keep
    validated: dict[int, list[int]] = {}
    for (item, part), keep in sorted(kept.items()):
        if keep:
            validated.setdefault(item, []).append(part)
    return validated, batches


def export_negclip(db: sqlite_utils.Database, dataset: str, out: Path, *, seed: int = 0) -> dict[str, Any]:
    """Write the items with validated negatives as the training table NegCLIP's fork of open_clip
    reads (`negclip.tsv`, tab-separated as open_clip's `--csv-separator` default): `filepath` (the
    image, under the dataset's image root), `title` (the caption), `neg_caption` (a Python list
    literal of the item's validated negative captions: one for a pair, those of a retrieval item
    that were validated) and `neg_image` (a list literal of row numbers whose images serve as hard
    negative images: NegCLIP takes its nearest neighbours; here up to three other rows of the same
    category, drawn with `seed`)."""
    validated, batches = validated_negatives(db, dataset)
    if not validated:
        raise BatchError(f"no negative of {dataset} is validated yet: its batches decided none as wrong for the image")
    row = store.get_dataset(db, dataset)
    root = Path(row["image_root"]) if row["image_root"] else None
    by_id = store.items_by_id(db, validated)
    items = [by_id[i] for i in sorted(validated)]
    frame = pd.DataFrame(
        {
            "filepath": [_image_file(root, item["images"][0]) for item in items],
            "title": [item["captions"][0] for item in items],
            "neg_caption": [repr(_validated_captions(item, validated[item["id"]])) for item in items],
            "neg_image": [repr(rows) for rows in _neighbour_rows([item["category"] for item in items], seed)],
        }
    )
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / NEGCLIP_FILE, sep="\t", index=False)
    return {
        "dataset": dataset,
        "format": "negclip-csv",
        "batches": batches,
        "n_rows": len(frame),
        "image_paths": "absolute, under the image root" if root else "as stored (the dataset has no image root)",
        "files": [NEGCLIP_FILE],
        "train_with": f"--train-data {NEGCLIP_FILE} --csv-img-key filepath --csv-caption-key title "
        "--csv-hard-captions-key neg_caption",
    }


def _validated_captions(item: store.ItemRow, parts: list[int]) -> list[str]:
    """The captions of an item's validated negatives (part k is its k-th negative)."""
    negatives = item_kinds.negative_captions(item)
    return [item["captions"][negatives[part]] for part in parts]


def _image_file(root: Path | None, reference: str) -> str:
    """The image as a training script opens it: its file under the root (never outside it)."""
    return str(resolve_image(root, reference)) if root else reference


def _neighbour_rows(categories: list[str], seed: int) -> list[list[int]]:
    """For each row, up to `NEGCLIP_IMAGES_PER_ROW` other rows of its category (any other row
    when it is alone in its category; itself when it is the only row)."""
    rng = random.Random(seed)
    by_category: dict[str, list[int]] = {}
    for n, category in enumerate(categories):
        by_category.setdefault(category, []).append(n)
    everyone = list(range(len(categories)))
    chosen = []
    for n, category in enumerate(categories):
        others = [m for m in by_category[category] if m != n] or [m for m in everyone if m != n] or [n]
        chosen.append(sorted(rng.sample(others, min(NEGCLIP_IMAGES_PER_ROW, len(others)))))
    return chosen


# Training tables `./foil export DATASET --format NAME` writes from validated items.
TRAINING_FORMATS = {"negclip-csv": export_negclip}


def training_archive(db: sqlite_utils.Database, dataset: str, fmt: str, folder: Path) -> tuple[dict[str, Any], bytes]:
    """A training format (`TRAINING_FORMATS`) written into a fresh `folder` (an earlier export
    there is removed), zipped: the Datasets page's download of what `foil export` writes."""
    shutil.rmtree(folder, ignore_errors=True)
    report = TRAINING_FORMATS[fmt](db, dataset, folder)
    return report, paths.zip_folder(folder)

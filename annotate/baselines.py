"""Human baselines: annotators' answers measured by the same metric functions as models.

Each question (item, part) becomes one outcome: the majority answer of its annotators, right or
wrong against the item's structure (baselines) or ground truth (validation, ranking). A tie
between a right and a wrong answer counts as wrong, as a tie between scores does for a model.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import sqlite_utils

from analysis import metrics as m
from analysis.results import BOOTSTRAP, bivlc_types
from annotate.task_types import REGISTRY, is_correct
from data import store

BASELINE_TASKS = tuple(name for name, kind in REGISTRY.items() if kind.human_baseline)
# Tasks where an annotator answers the model's own question (which caption / image / ranking).
MODEL_LIKE_TASKS = tuple(name for name, kind in REGISTRY.items() if kind.model_like)


class BaselineError(store.StoreError):
    """The batches hold nothing a human baseline can be computed from."""


def question_outcomes(db: sqlite_utils.Database, batch_name: str) -> dict[tuple[int, int], bool]:
    """(item, part) -> whether the annotators' majority answer is right (ties are wrong)."""
    batch = store.get_batch(db, batch_name)
    labels = [label for label in store.batch_labels(db, batch["id"]) if not label["is_gold"]]
    items = store.items_by_id(db, {label["item"] for label in labels})
    votes: dict[tuple[int, int], Counter[bool]] = {}
    for label in labels:
        verdict = is_correct(batch["task"], items[label["item"]], label["part"], label["answer"])
        if verdict is not None:
            votes.setdefault((label["item"], label["part"]), Counter())[verdict] += 1
    return {unit: counts[True] > counts[False] for unit, counts in votes.items()}


def human_baseline(db: sqlite_utils.Database, batch_names: list[str], *, n_boot: int = BOOTSTRAP, seed: int = 0) -> dict[str, Any]:
    """Metrics of the humans in the given batches, with the keys `cli.py metrics` uses."""
    batches = [store.get_batch(db, name) for name in batch_names]
    datasets = {b["dataset"] for b in batches}
    if len(datasets) != 1:
        raise BaselineError(f"baseline batches must share one dataset, got {sorted(datasets)}")
    by_task = {b["task"]: question_outcomes(db, b["name"]) for b in batches if b["task"] in BASELINE_TASKS}
    if not by_task:
        raise BaselineError(f"none of {batch_names} is a baseline task {BASELINE_TASKS}")
    items = store.items_by_id(db, {item for outcomes in by_task.values() for item, _ in outcomes})
    kinds = {item["kind"] for item in items.values()}
    summary = _group_baseline(by_task, items, n_boot, seed) if kinds == {"group"} else _single_baseline(by_task, items, n_boot, seed)
    return {"dataset": datasets.pop(), "batches": batch_names, **summary}


def _single_baseline(by_task: dict[str, dict[tuple[int, int], bool]], items: dict[int, store.ItemRow], n_boot: int, seed: int) -> dict[str, Any]:
    """Pairs and triples: accuracy per category (ranking points for hard positives)."""
    task, outcomes = next(iter(by_task.items()))
    units = sorted(outcomes)
    categories = np.array([items[item]["category"] for item, _ in units])
    correct = np.array([outcomes[u] for u in units])
    if task == "rank_captions":  # a point when the majority ranking is right (both of two annotators)
        return m.summarize({"ranking_points": correct}, categories, n_boot=n_boot, seed=seed)
    return m.summarize({"accuracy_micro": correct}, categories, macro=("accuracy_micro", "accuracy_macro"), n_boot=n_boot, seed=seed)


def _group_baseline(by_task: dict[str, dict[tuple[int, int], bool]], items: dict[int, store.ItemRow], n_boot: int, seed: int) -> dict[str, Any]:
    """BiVLC: the four queries of each instance combine into I2T, T2I and Group as for models."""
    i2t, t2i = by_task.get("baseline_i2t", {}), by_task.get("baseline_t2i", {})
    complete = sorted(i for i in items if all(u in d for d in (i2t, t2i) if d for u in ((i, 0), (i, 1))))
    if not complete:
        raise BaselineError("no instance has all its questions answered yet")
    parts: dict[str, np.ndarray] = {}
    if i2t:
        parts.update(ipos2t=np.array([i2t[(i, 0)] for i in complete]), ineg2t=np.array([i2t[(i, 1)] for i in complete]))
    if t2i:
        parts.update(tpos2i=np.array([t2i[(i, 0)] for i in complete]), tneg2i=np.array([t2i[(i, 1)] for i in complete]))
    if len(parts) == 4:
        outcomes = m.combine_bivlc(**parts)
        ordered = {k: outcomes[k] for k in m.BIVLC_KEYS}
    else:
        direction = "i2t" if i2t else "t2i"
        first, second = parts.values()
        ordered = {direction: first & second, **parts}
    categories = np.array([items[i]["category"] for i in complete])
    summary = m.summarize(ordered, categories, n_boot=n_boot, seed=seed)
    types = bivlc_types(categories)
    if types is not None:
        by_type = m.summarize(ordered, types, n_boot=n_boot, seed=seed)
        summary["by_type"], summary["type_intervals"] = by_type["by_category"], by_type["category_intervals"]
    return summary


def item_outcomes(db: sqlite_utils.Database, dataset: str) -> dict[int, bool]:
    """Item id -> whether humans got it right: the majority answer of every answered question
    of the item is right, over the dataset's baseline and ranking batches (gold excluded)."""
    outcomes: dict[int, bool] = {}
    for batch in store.list_batches(db):
        if batch["dataset"] == dataset and batch["task"] in MODEL_LIKE_TASKS:
            for (item, _), right in question_outcomes(db, batch["name"]).items():
                outcomes[item] = outcomes.get(item, True) and right
    return outcomes


def dataset_baseline(db: sqlite_utils.Database, dataset: str) -> dict[str, Any] | None:
    """The human baseline from every baseline batch of a dataset, or None if there is none yet."""
    names = [b["name"] for b in store.list_batches(db) if b["dataset"] == dataset and b["task"] in ("baseline_i2t", "baseline_t2i")]
    if not names:
        return None
    try:
        return human_baseline(db, names)  # the resamples of the CLI and of the models beside it
    except BaselineError:
        return None

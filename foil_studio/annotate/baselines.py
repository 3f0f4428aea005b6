"""Human baselines: annotators' answers measured by the same metric functions as models.

Each question (item, part) becomes one outcome: the majority answer of its annotators, right or
wrong against the item's structure (baselines) or ground truth (validation, ranking). A tie
between a right and a wrong answer counts as wrong, as a tie between scores does for a model.
A share of right outcomes has the exact (Clopper-Pearson) interval, and a figure from fewer than
`BASELINE_MIN_ITEMS` decided items is said as such, never as a baseline (`figure_text`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import sqlite_utils

from foil_studio.analysis import metrics as m
from foil_studio.analysis.metric_families.base import category_types
from foil_studio.analysis.results import BOOTSTRAP, source_format
from foil_studio.annotate.task_types import REGISTRY, Baseline, is_correct
from foil_studio.data import formats, store
from foil_studio.data.plain_text import figure, interval_text

BASELINE_TASKS = tuple(name for name, task_type in REGISTRY.items() if task_type.baseline is not None)
# Tasks where an annotator answers the model's own question (which caption / image / ranking).
MODEL_LIKE_TASKS = tuple(name for name, task_type in REGISTRY.items() if task_type.model_like)
# Tasks whose baseline is measured by the models' own metrics, drawn beside their runs.
BESIDE_MODELS_TASKS = tuple(
    name for name, task_type in REGISTRY.items() if task_type.baseline and task_type.baseline.beside_models
)


Outcomes = dict[tuple[int, int], bool]  # (item, part) -> the majority answer is right

# Decided items (questions with a majority answer; BiVLC: complete instances) below which a human
# figure is shown with its n and interval but not cited as a baseline.
BASELINE_MIN_ITEMS = 30


class BaselineError(store.StoreError):
    """The batches hold nothing a human baseline can be computed from."""


def question_outcomes(db: sqlite_utils.Database, batch_name: str) -> dict[tuple[int, int], bool]:
    """(item, part) -> whether the annotators' majority answer is right (ties are wrong)."""
    batch = store.get_batch(db, batch_name)
    labels = [label for label in store.batch_labels(db, batch["id"]) if not label["is_gold"]]
    items = store.items_by_id(db, {label["item"] for label in labels})
    votes: dict[tuple[int, int], Counter[bool]] = {}
    for label in labels:
        right = is_correct(batch["task_type"], items[label["item"]], label["part"], label["answer"])
        if right is not None:
            votes.setdefault((label["item"], label["part"]), Counter())[right] += 1
    return {unit: counts[True] > counts[False] for unit, counts in votes.items()}


def human_baseline(
    db: sqlite_utils.Database, batch_names: list[str], *, n_boot: int = BOOTSTRAP, seed: int = 0
) -> dict[str, Any]:
    """Metrics of the humans in the given batches, with the keys `./foil metrics` uses: shares of
    right outcomes with exact intervals, and each figure in words (`figures`, `figure_text`)."""
    batches = [store.get_batch(db, name) for name in batch_names]
    datasets = {b["dataset"] for b in batches}
    if len(datasets) != 1:
        raise BaselineError(f"baseline batches must share one dataset, got {sorted(datasets)}")
    by_task = {b["task_type"]: question_outcomes(db, b["name"]) for b in batches if b["task_type"] in BASELINE_TASKS}
    if not by_task:
        raise BaselineError(f"none of {batch_names} is a baseline task type {BASELINE_TASKS}")
    if not any(by_task.values()):  # no figure is defined before the first majority answer
        raise BaselineError(f"no question of {', '.join(batch_names)} has an answer yet: a baseline needs one")
    items = store.items_by_id(db, {item for outcomes in by_task.values() for item, _ in outcomes})
    dataset = datasets.pop()
    if _asks_several_parts(by_task, items.values()):
        summary = _group_baseline(by_task, items, source_format(db, dataset), n_boot, seed)
    else:
        summary = _single_baseline(by_task, items, n_boot, seed)
    figures = {
        key: figure_text(value, summary["intervals"].get(key), summary["n"])
        for key, value in summary["metrics"].items()
    }
    return {"dataset": dataset, "batches": batch_names, **summary, "min_items": BASELINE_MIN_ITEMS, "figures": figures}


def figure_text(value: float, interval: Sequence[float] | None, n: int, min_items: int = BASELINE_MIN_ITEMS) -> str:
    """A human figure with its number of decided items and its 95% interval, the one way the page,
    the CLI and the health card say it; below `min_items` items it says it is too few for a baseline.

    >>> figure_text(92.5, (83.1, 97.4), 40)
    '92.50 from 40 items (95% CI 83.10 to 97.40)'
    >>> figure_text(100.0, (15.811, 100.0), 2)
    '100.00 from 2 items (95% CI 15.81 to 100.00); too few for a baseline (30 needed)'
    """
    shown = interval_text(interval)
    said = f"{figure(value)} from {n} item{'s' if n != 1 else ''}" + (f" (95% CI {shown})" if shown else "")
    return said if n >= min_items else f"{said}; too few for a baseline ({min_items} needed)"


def figure_sentence(humans: Mapping[str, Any], key: str) -> str:
    """The humans' overall `key` in words, for the page beside the models' table ("" without it)."""
    if key not in humans["figures"]:
        return ""
    return f"Humans' {key}: {humans['figures'][key]}."


def _asks_several_parts(by_task: dict[str, Outcomes], items: Iterable[store.ItemRow]) -> bool:
    """Whether the tasks ask more than one question of these items (`TaskType.parts`: a BiVLC
    group's two captions or two images), whose outcomes then combine per item as the models' do."""
    return any(len(REGISTRY[task_type].parts(item)) > 1 for task_type in by_task for item in items)


def _single_baseline(
    by_task: dict[str, dict[tuple[int, int], bool]], items: dict[int, store.ItemRow], n_boot: int, seed: int
) -> dict[str, Any]:
    """Pairs and triples: the first task's metric per category (`Baseline.metric`: accuracy, or
    ranking points for hard positives), with its mean over categories where it has one."""
    task_type, outcomes = next(iter(by_task.items()))
    units = sorted(outcomes)
    categories = np.array([items[item]["category"] for item, _ in units])
    correct = np.array([outcomes[u] for u in units])
    baseline = REGISTRY[task_type].baseline
    assert baseline is not None  # by_task holds baseline tasks only
    macro = (baseline.metric, baseline.macro) if baseline.macro else None
    return m.summarize({baseline.metric: correct}, categories, macro=macro, n_boot=n_boot, seed=seed, exact=True)


def _group_baseline(
    by_task: dict[str, Outcomes],
    items: dict[int, store.ItemRow],
    source: formats.Format,
    n_boot: int,
    seed: int,
) -> dict[str, Any]:
    """BiVLC: the four queries of each instance combine into I2T, T2I and Group as for models
    (one direction: its two queries and both right); types where the source declares them."""
    asked = _directions(by_task)
    keyed = [(part, key, outcomes) for b, outcomes in asked for part, key in enumerate(b.part_outcomes)]
    complete = sorted(i for i in items if all((i, part) in outcomes for part, _, outcomes in keyed))
    if not complete:
        raise BaselineError("no instance has all its questions answered yet")
    parts = {key: np.array([outcomes[(i, part)] for i in complete]) for part, key, outcomes in keyed}
    if len(asked) == 1:
        first, second = parts.values()
        ordered = {asked[0][0].direction: first & second, **parts}
    else:
        outcomes = m.combine_bivlc(**parts)
        ordered = {k: outcomes[k] for k in m.BIVLC_KEYS}
    categories = np.array([items[i]["category"] for i in complete])
    summary = m.summarize(ordered, categories, n_boot=n_boot, seed=seed, exact=True)
    types = category_types(categories, source)
    if types is not None:
        by_type = m.summarize(ordered, types, n_boot=n_boot, seed=seed, exact=True)
        summary["by_type"], summary["type_intervals"] = by_type["by_category"], by_type["category_intervals"]
    return summary


def _directions(by_task: dict[str, Outcomes]) -> list[tuple[Baseline, Outcomes]]:
    """The answered BiVLC directions among the tasks (`Baseline.part_outcomes`), each with its
    questions' outcomes."""
    asked = [(REGISTRY[task_type].baseline, outcomes) for task_type, outcomes in by_task.items() if outcomes]
    return [(b, outcomes) for b, outcomes in asked if b is not None and b.part_outcomes]


def item_outcomes(db: sqlite_utils.Database, dataset: str) -> dict[int, bool]:
    """Item id -> whether humans got it right: the majority answer of every answered question
    of the item is right, over the dataset's baseline and ranking batches (gold excluded)."""
    outcomes: dict[int, bool] = {}
    for batch in store.list_batches(db):
        if batch["dataset"] == dataset and batch["task_type"] in MODEL_LIKE_TASKS:
            for (item, _), right in question_outcomes(db, batch["name"]).items():
                outcomes[item] = outcomes.get(item, True) and right
    return outcomes


def dataset_baseline(db: sqlite_utils.Database, dataset: str) -> dict[str, Any] | None:
    """The human baseline from every baseline batch of a dataset, or None if there is none yet."""
    names = [
        b["name"] for b in store.list_batches(db) if b["dataset"] == dataset and b["task_type"] in BESIDE_MODELS_TASKS
    ]
    if not names:
        return None
    try:
        return human_baseline(db, names)  # the resamples of the CLI and of the models beside it
    except BaselineError:
        return None

"""Turn a stored run (our scores or imported decisions) into the metrics of `cli.py metrics`.

Scores and imported outcomes both become arrays of per-item outcomes first, then go through the
same functions of ``analysis.metrics``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlite_utils

from analysis import metrics as m
from data import formats, item_kinds, store, subsets

Run = store.RunColumns


# Resamples behind every 95% interval of a run, in the app and the CLI alike (seed 0).
BOOTSTRAP = 1000

class UnsupportedRunError(store.StoreError):
    """A run holds nothing the metrics can use (say, candidate-image scores)."""


def load_run(db: sqlite_utils.Database, dataset: str, run: str, subset: str | None = None) -> Run:
    """The scored items of one run of a dataset (of one named subset, `data.subsets`), as columns."""
    return store.run_columns(db, store.get_run(db, dataset, run)["id"], truth_flag=subsets.truth_flag(subset))


def run_metrics(
    db: sqlite_utils.Database, dataset: str, run: str, *, n_boot: int = 1000, seed: int = 0, subset: str | None = None,
) -> dict[str, Any]:
    """The metrics JSON of cli.md for one run of one dataset (on a named subset of its items:
    `subset` then names it in the result).

    Computed once per run, subset, bootstrap size and seed, then stored until the run's scores change.
    """
    run_id = store.get_run(db, dataset, run)["id"]
    flag = subsets.truth_flag(subset)
    settings = f"n_boot={n_boot};seed={seed}" + (f";subset={subset}" if flag else "")
    stored = store.get_run_summary(db, run_id, settings)
    if stored is not None:
        return stored
    columns = store.run_columns(db, run_id, truth_flag=flag)
    if not len(columns):
        raise UnsupportedRunError(f"run {run!r} on {dataset!r} has no scored items" + (f" in subset {subset!r}" if flag else ""))
    summary = _summarize(columns, store.get_dataset(db, dataset)["source_kind"], n_boot, seed)
    named = {"subset": subset} if flag else {}
    result = json.loads(json.dumps({"dataset": dataset, "run": run, **named, **summary}))  # the stored form, whichever call reads it
    store.put_run_summary(db, run_id, settings, result)
    return result


def _summarize(run: Run, source_kind: str, n_boot: int, seed: int) -> dict[str, Any]:
    if run.run_kind == "choices":
        return choice_summary(run, n_boot=n_boot, seed=seed)
    return metric_family(item_kind(run)).summarize(run, source_kind, n_boot, seed)


def item_kind(run: Run) -> str:
    """The one item kind of a run (a run mixing kinds has no single metric)."""
    kinds = set(run.kinds.tolist())
    if len(kinds) != 1:
        raise UnsupportedRunError(f"a run mixes item kinds {sorted(kinds)}; score one kind per dataset")
    return kinds.pop()


def _scores(run: Run) -> np.ndarray:
    if run.scores is None:
        raise UnsupportedRunError("this run holds imported decisions, not similarity scores")
    return run.scores


def _outcome_column(run: Run, key: str) -> np.ndarray:
    return np.array([bool(outcome[key]) for outcome in run.outcomes])


def pair_correct(run: Run) -> tuple[np.ndarray, int]:
    """Per-item `s(c) > s(c_n)` (or an imported `correct`) and the number of ties."""
    if run.scores is None:
        return _outcome_column(run, "correct"), 0
    comparison = m.strictly_greater(run.scores[:, 0], run.scores[:, 1])
    return comparison.wins, comparison.ties


def group_outcomes(run: Run) -> tuple[dict[str, np.ndarray], int]:
    """The seven BiVLC outcomes of each item, from scores or from imported decisions."""
    if run.scores is None:
        parts = {k: _outcome_column(run, k) for k in ("ipos2t", "ineg2t", "tpos2i", "tneg2i")}
        return m.combine_bivlc(**parts), 0
    return m.bivlc_outcomes(run.scores), m.bivlc_ties(run.scores)


def group_summary(run: Run, n_boot: int, seed: int) -> dict[str, Any]:
    """BiVLC metrics, with `by_category` holding both types (`replace`) and `replace_obj` keys."""
    outcomes, ties = group_outcomes(run)
    ordered = {k: outcomes[k] for k in m.BIVLC_KEYS}
    summary = m.summarize(ordered, run.categories, n_boot=n_boot, seed=seed)
    types = np.array([str(c).split("_")[0] for c in run.categories])
    by_type = m.summarize(ordered, types, n_boot=n_boot, seed=seed)
    summary["by_category"] = {**by_type["by_category"], **summary["by_category"]}
    summary["category_intervals"] = {**by_type["category_intervals"], **summary["category_intervals"]}
    return {**summary, "ties": ties}


def triple_summary(run: Run, n_boot: int, seed: int) -> dict[str, Any]:
    """Hard-positive metrics plus the mean of each caption's score."""
    scores = _scores(run)[:, :3]
    outcomes = m.hard_positive_outcomes(scores[:, 0], scores[:, 1], scores[:, 2])
    summary = m.summarize(outcomes, run.categories, n_boot=n_boot, seed=seed)
    means = dict(zip(("mean_s_c", "mean_s_cn", "mean_s_cp"), (float(v) for v in scores.mean(axis=0))))
    summary["metrics"].update(means)
    for category, values in summary["by_category"].items():
        mask = run.categories == category
        values.update(zip(("mean_s_c", "mean_s_cn", "mean_s_cp"), (float(v) for v in scores[mask].mean(axis=0))))
    ties = int(np.sum(scores[:, 0] == scores[:, 1]) + np.sum(scores[:, 2] == scores[:, 1]))
    return {**summary, "ties": ties}


def pair_summary(run: Run, source_kind: str, n_boot: int, seed: int) -> dict[str, Any]:
    """Accuracy `s(c) > s(c_n)` overall, macro over categories and per category, the macro
    figure under the name the source's format gives it (ARO: `macro_accuracy`, as its paper)."""
    correct, ties = pair_correct(run)
    source = formats.REGISTRY.get(source_kind)
    macro_key = source.macro_name if source is not None else formats.Format.macro_name
    summary = m.summarize({"accuracy_micro": correct}, run.categories, macro=("accuracy_micro", macro_key), n_boot=n_boot, seed=seed)
    return {**summary, "ties": ties}


def retrieval_summary(run: Run, n_boot: int, seed: int) -> dict[str, Any]:
    """Recall at 1, 3 and 5 of the positive among its negatives (CREPE)."""
    scores = _scores(run)
    outcomes = {f"recall_at_{k}": m.recall_at_k(scores, k) for k in (1, 3, 5)}
    ties = int(np.sum(scores[:, 1:] == scores[:, :1]))
    return {**m.summarize(outcomes, run.categories, n_boot=n_boot, seed=seed), "ties": ties}


def pair_items(run: Run) -> dict[str, np.ndarray]:
    """Per item: right when the caption scores above the negative (imported: `correct`)."""
    return {"correct": pair_correct(run)[0]}


def hard_positive_items(run: Run) -> dict[str, np.ndarray]:
    """Per item: right when both the caption and its hard positive score above the negative, and
    brittle when the caption does but the hard positive does not (imported: `correct` only)."""
    if run.scores is None:
        return pair_items(run)
    outcomes = m.hard_positive_outcomes(run.scores[:, 0], run.scores[:, 1], run.scores[:, 2])
    return {"correct": outcomes["aug_acc"], "brittle": outcomes["brittleness"]}


def group_items(run: Run) -> dict[str, np.ndarray]:
    """Per item: right when BiVLC's group score is (both directions, both images and captions)."""
    return {"correct": group_outcomes(run)[0]["group"]}


def retrieval_items(run: Run) -> dict[str, np.ndarray]:
    """Per item: right when the positive ranks first (imported: `correct`)."""
    return {"correct": m.recall_at_k(run.scores, 1)} if run.scores is not None else pair_items(run)


@dataclass(frozen=True)
class MetricFamily:
    """How a run of one item kind becomes benchmark metrics (`summarize`) and per-item columns
    for inspection (`per_item`: `correct`, and any further column such as `brittle`, in one
    pass). Item kinds name their family (`ItemKind.metric_family`)."""

    name: str
    summarize: Callable[[Run, str, int, int], dict[str, Any]]  # run, source kind, bootstrap size, seed
    per_item: Callable[[Run], dict[str, np.ndarray]]


METRIC_FAMILIES = {
    family.name: family for family in (
        MetricFamily("pairwise", pair_summary, pair_items),
        MetricFamily("hard_positive", lambda run, _, n_boot, seed: triple_summary(run, n_boot, seed), hard_positive_items),
        MetricFamily("bivlc", lambda run, _, n_boot, seed: group_summary(run, n_boot, seed), group_items),
        MetricFamily("retrieval", lambda run, _, n_boot, seed: retrieval_summary(run, n_boot, seed), retrieval_items),
    )
}


def metric_family(kind: str) -> MetricFamily:
    """The metric family of an item kind; UnsupportedRunError when the kind has none."""
    record = item_kinds.item_kind(kind)
    if record.metric_family is None:
        raise UnsupportedRunError(f"{kind} items have no right answer to score or inspect: {record.no_metric_because}")
    return METRIC_FAMILIES[record.metric_family]


def choice_summary(run: Run, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Accuracy of imported choices (GPT-4V) pooled over caption orderings, and per ordering.

    An answer naming neither option counts as wrong; `n_unparsed` says how many there were.
    `accuracy_reported` uses the source's own per-answer judgement instead of our reading.
    """
    answers = [(category, ordering, answer) for category, outcome in zip(run.categories, run.outcomes) for ordering, answer in sorted(outcome.items())]
    categories = np.array([category for category, _, _ in answers])
    outcomes = {
        "accuracy": np.array([bool(a["correct"]) for _, _, a in answers]),
        "accuracy_reported": np.array([bool(a.get("reported_correct")) for _, _, a in answers]),
    }
    summary = m.summarize(outcomes, categories, n_boot=n_boot, seed=seed)
    summary["n"] = len(run)
    for category, values in summary["by_category"].items():
        values["n"] = int(np.sum(run.categories == category))  # items, not answers
    summary["metrics"]["n_unparsed"] = sum(not a["parsed"] for _, _, a in answers)
    summary["by_ordering"] = _by_ordering(answers)
    return summary


def choice_correct(run: Run) -> tuple[np.ndarray, dict[str, list[bool | None]]]:
    """Per item of a choices run: right under every ordering it was asked in, and per ordering
    whether it was right (None where that ordering was not asked)."""
    orderings = sorted({ordering for outcome in run.outcomes for ordering in outcome})
    per = {o: [None if o not in outcome else bool(outcome[o]["correct"]) for outcome in run.outcomes] for o in orderings}
    every = np.array([all(bool(answer["correct"]) for answer in outcome.values()) for outcome in run.outcomes], dtype=bool)
    return every, per


def _by_ordering(answers: list[tuple[str, str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    result = {}
    for ordering in sorted({o for _, o, _ in answers}):
        chosen = [a for _, o, a in answers if o == ordering]
        result[ordering] = {
            "n": len(chosen),
            "accuracy": m.percent([a["correct"] for a in chosen]),
            "n_unparsed": sum(not a["parsed"] for a in chosen),
        }
    return result


def run_summaries(db: sqlite_utils.Database, dataset: str, *, n_boot: int = BOOTSTRAP, subset: str | None = None) -> dict[str, dict[str, Any]]:
    """Run name -> its metrics JSON (or ``{"note": why not}``) for every run of a dataset, with
    the same bootstrap (size and seed) as ``cli.py metrics``: the app and the CLI show one number."""
    summaries: dict[str, dict[str, Any]] = {}
    for run in store.list_runs(db, dataset):
        try:
            summaries[run["run"]] = run_metrics(db, dataset, run["run"], n_boot=n_boot, subset=subset)
        except UnsupportedRunError as error:
            summaries[run["run"]] = {"note": str(error)}
    return summaries


def runs_overview(runs: list[dict[str, Any]], summaries: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run (rows of `store.list_runs`): model, kind, items and its headline figures."""
    return [{**run, **summaries[run["run"]].get("metrics", summaries[run["run"]])} for run in runs]


def category_table(summaries: Mapping[str, dict[str, Any]], runs: list[str], key: str) -> list[dict[str, Any]]:
    """Per category (and overall), the metric `key` of each run with its 95% interval."""
    table: dict[str, dict[str, Any]] = {}
    for run in runs:
        result = summaries[run]
        for category, values in result["by_category"].items():
            row = table.setdefault(category, {"category": category, "n": values["n"]})
            row[run] = values.get(key)
            row[f"{run} 95% CI"] = result.get("category_intervals", {}).get(category, {}).get(key)
        overall = table.setdefault("(all)", {"category": "(all)", "n": result["n"]})
        overall[run] = result["metrics"].get(key)
        overall[f"{run} 95% CI"] = result["intervals"].get(key)
    return list(table.values())


def interval_text(interval: Sequence[float] | None) -> str:
    """An interval as "low–high" with two decimals (as the figures beside it), "" when there is none.

    >>> interval_text((78.794, 92.941)), interval_text(None)
    ('78.79–92.94', '')
    """
    if interval is None or any(v != v for v in interval):  # NaN: too few items to resample
        return ""
    return f"{interval[0]:.2f}–{interval[1]:.2f}"


def error_bars(values: Sequence[float], intervals: Sequence[Sequence[float] | None]) -> dict[str, Any]:
    """Plotly `error_y` for bars at `values` with asymmetric 95% intervals (none where absent)."""
    lows = [v - i[0] if i is not None else 0.0 for v, i in zip(values, intervals)]
    highs = [i[1] - v if i is not None else 0.0 for v, i in zip(values, intervals)]
    return {"type": "data", "symmetric": False, "array": highs, "arrayminus": lows, "thickness": 1}

"""Turn a stored run (our scores or imported decisions) into the metrics of `cli.py metrics`.

Scores and imported outcomes both become arrays of per-item outcomes first, then go through the
same functions of ``analysis.metrics``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import sqlite_utils

from analysis import metrics as m
from annotate import store

Rows = list[dict[str, Any]]


class UnsupportedRunError(store.StoreError):
    """A run holds nothing the metrics can use (say, candidate-image scores)."""


def run_metrics(db: sqlite_utils.Database, dataset: str, run: str, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The metrics JSON of cli.md for one run of one dataset."""
    dataset_row = store.get_dataset(db, dataset)
    run_row = store.get_run(db, dataset, run)
    rows = store.run_rows(db, run_row["id"])
    if not rows:
        raise UnsupportedRunError(f"run {run!r} on {dataset!r} has no scored items")
    summary = _summarize(run_row["kind"], rows, dataset_row["source_kind"], n_boot, seed)
    return {"dataset": dataset, "run": run, **summary}


def _summarize(run_kind: str, rows: Rows, source_kind: str, n_boot: int, seed: int) -> dict[str, Any]:
    if run_kind == "choices":
        return choice_summary(rows, n_boot=n_boot, seed=seed)
    kinds = {row["kind"] for row in rows}
    if len(kinds) != 1:
        raise UnsupportedRunError(f"a run mixes item kinds {sorted(kinds)}; score one kind per dataset")
    kind = kinds.pop()
    categories = np.array([row["category"] for row in rows])
    if kind == "pair":
        correct, ties = pair_correct(rows)
        macro_key = "macro_accuracy" if source_kind == "aro" else "accuracy_macro"
        summary = m.summarize({"accuracy_micro": correct}, categories, macro=("accuracy_micro", macro_key), n_boot=n_boot, seed=seed)
        return {**summary, "ties": ties}
    if kind == "group":
        return group_summary(rows, categories, n_boot, seed)
    if kind == "triple":
        return triple_summary(rows, categories, n_boot, seed)
    if kind == "retrieval":
        scores = np.array([row["scores"] for row in rows], dtype=float)
        outcomes = {f"recall_at_{k}": m.recall_at_k(scores, k) for k in (1, 3, 5)}
        ties = int(np.sum(scores[:, 1:] == scores[:, :1]))
        return {**m.summarize(outcomes, categories, n_boot=n_boot, seed=seed), "ties": ties}
    raise UnsupportedRunError(f"no benchmark metric for {kind} items")


def pair_correct(rows: Rows) -> tuple[np.ndarray, int]:
    """Per-item `s(c) > s(c_n)` (or an imported `correct`) and the number of ties."""
    if rows[0]["scores"] is None:
        return np.array([bool(row["outcome"]["correct"]) for row in rows]), 0
    scores = np.array([row["scores"][:2] for row in rows], dtype=float)
    comparison = m.strictly_greater(scores[:, 0], scores[:, 1])
    return comparison.wins, comparison.ties


def group_outcomes(rows: Rows) -> tuple[dict[str, np.ndarray], int]:
    """The seven BiVLC outcomes of each item, from scores or from imported decisions."""
    if rows[0]["scores"] is None:
        parts = {k: np.array([bool(row["outcome"][k]) for row in rows]) for k in ("ipos2t", "ineg2t", "tpos2i", "tneg2i")}
        return m.combine_bivlc(**parts), 0
    scores = np.array([row["scores"] for row in rows], dtype=float)
    return m.bivlc_outcomes(scores), m.bivlc_ties(scores)


def group_summary(rows: Rows, categories: np.ndarray, n_boot: int, seed: int) -> dict[str, Any]:
    """BiVLC metrics, with `by_category` holding both types (`replace`) and `replace_obj` keys."""
    outcomes, ties = group_outcomes(rows)
    ordered = {k: outcomes[k] for k in m.BIVLC_KEYS}
    summary = m.summarize(ordered, categories, n_boot=n_boot, seed=seed)
    types = np.array([str(c).split("_")[0] for c in categories])
    by_type = m.summarize(ordered, types, n_boot=n_boot, seed=seed)
    summary["by_category"] = {**by_type["by_category"], **summary["by_category"]}
    summary["category_intervals"] = {**by_type["category_intervals"], **summary["category_intervals"]}
    return {**summary, "ties": ties}


def triple_summary(rows: Rows, categories: np.ndarray, n_boot: int, seed: int) -> dict[str, Any]:
    """Hard-positive metrics plus the mean of each caption's score."""
    scores = np.array([row["scores"][:3] for row in rows], dtype=float)
    outcomes = m.hard_positive_outcomes(scores[:, 0], scores[:, 1], scores[:, 2])
    summary = m.summarize(outcomes, categories, n_boot=n_boot, seed=seed)
    means = dict(zip(("mean_s_c", "mean_s_cn", "mean_s_cp"), (float(v) for v in scores.mean(axis=0))))
    summary["metrics"].update(means)
    for category, values in summary["by_category"].items():
        mask = categories == category
        values.update(zip(("mean_s_c", "mean_s_cn", "mean_s_cp"), (float(v) for v in scores[mask].mean(axis=0))))
    ties = int(np.sum(scores[:, 0] == scores[:, 1]) + np.sum(scores[:, 2] == scores[:, 1]))
    return {**summary, "ties": ties}


def choice_summary(rows: Rows, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Accuracy of imported choices (GPT-4V) pooled over caption orderings, and per ordering.

    An answer naming neither option counts as wrong; `n_unparsed` says how many there were.
    `accuracy_reported` uses the source's own per-answer judgement instead of our reading.
    """
    answers = [(row["category"], ordering, answer) for row in rows for ordering, answer in sorted(row["outcome"].items())]
    categories = np.array([category for category, _, _ in answers])
    outcomes = {
        "accuracy": np.array([bool(a["correct"]) for _, _, a in answers]),
        "accuracy_reported": np.array([bool(a.get("reported_correct")) for _, _, a in answers]),
    }
    summary = m.summarize(outcomes, categories, n_boot=n_boot, seed=seed)
    summary["n"] = len(rows)
    for category, values in summary["by_category"].items():
        values["n"] = sum(row["category"] == category for row in rows)  # items, not answers
    summary["metrics"]["n_unparsed"] = sum(not a["parsed"] for _, _, a in answers)
    summary["by_ordering"] = _by_ordering(answers)
    return summary


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


def runs_overview(db: sqlite_utils.Database, dataset: str) -> list[dict[str, Any]]:
    """One row per run of a dataset: model, kind, items and its headline figures."""
    rows = []
    for run in store.list_runs(db, dataset):
        try:
            figures = run_metrics(db, dataset, run["run"], n_boot=0)["metrics"]
        except UnsupportedRunError as error:
            figures = {"note": str(error)}
        rows.append({**run, **figures})
    return rows


def category_table(db: sqlite_utils.Database, dataset: str, runs: list[str], key: str, *, n_boot: int = 200) -> list[dict[str, Any]]:
    """Per category (and overall), the metric `key` of each run with its 95% interval."""
    table: dict[str, dict[str, Any]] = {}
    for run in runs:
        result = run_metrics(db, dataset, run, n_boot=n_boot)
        for category, values in result["by_category"].items():
            row = table.setdefault(category, {"category": category, "n": values["n"]})
            row[run] = values.get(key)
            row[f"{run} 95% CI"] = result.get("category_intervals", {}).get(category, {}).get(key)
        overall = table.setdefault("(all)", {"category": "(all)", "n": result["n"]})
        overall[run] = result["metrics"].get(key)
        overall[f"{run} 95% CI"] = result["intervals"].get(key)
    return list(table.values())

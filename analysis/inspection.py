"""What the inspection pages show: per-item gaps and correctness, run comparisons, failures.

Everything here works from stored runs: our own scores give gaps and correctness; imported
per-instance results (BiVLC, SugarCrepe-correct) give correctness only.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import sqlite_utils
from statsmodels.stats.contingency_tables import mcnemar

from analysis import metrics as m
from analysis.results import group_outcomes, pair_correct
from annotate import store

GAP_NAMES = {
    "pair": ("s(c) - s(c_n)",),
    "triple": ("s(c) - s(c_n)", "s(c_p) - s(c_n)"),
    "group": ("Ipos2T: s(C0,I0) - s(C1,I0)", "Ineg2T: s(C1,I1) - s(C0,I1)", "Tpos2I: s(C0,I0) - s(C0,I1)", "Tneg2I: s(C1,I1) - s(C1,I0)"),
}


def item_table(db: sqlite_utils.Database, dataset: str, run: str) -> pd.DataFrame:
    """One row per scored item: id, category, `correct`, and its score gaps where scores exist."""
    rows = store.run_rows(db, store.get_run(db, dataset, run)["id"])
    if not rows:
        return pd.DataFrame(columns=["item", "category", "correct"])
    frame = pd.DataFrame({"item": [r["item_id"] for r in rows], "category": [r["category"] for r in rows]})
    kind = rows[0]["kind"]
    frame["correct"] = _correct(kind, rows)
    if rows[0]["scores"] is not None and kind in GAP_NAMES:
        for name, values in zip(GAP_NAMES[kind], _gaps(kind, rows)):
            frame[name] = values
    return frame


def _correct(kind: str, rows: list[dict[str, Any]]) -> np.ndarray:
    if kind == "group":
        return group_outcomes(rows)[0]["group"]
    if kind == "triple" and rows[0]["scores"] is not None:
        scores = np.array([r["scores"][:3] for r in rows], dtype=float)
        return m.hard_positive_outcomes(scores[:, 0], scores[:, 1], scores[:, 2])["aug_acc"]
    if kind == "retrieval":
        return m.recall_at_k(np.array([r["scores"] for r in rows], dtype=float), 1)
    return pair_correct(rows)[0]


def _gaps(kind: str, rows: list[dict[str, Any]]) -> list[np.ndarray]:
    scores = np.array([r["scores"] for r in rows], dtype=float)
    if kind == "pair":
        return [scores[:, 0] - scores[:, 1]]
    if kind == "triple":
        return [scores[:, 0] - scores[:, 1], scores[:, 2] - scores[:, 1]]
    return [scores[:, 0, 0] - scores[:, 0, 1], scores[:, 1, 1] - scores[:, 1, 0], scores[:, 0, 0] - scores[:, 1, 0], scores[:, 1, 1] - scores[:, 0, 1]]


def share_below_zero(gaps: pd.Series) -> float:
    """Percent of items whose gap is not positive (the model's failures; ties included)."""
    return float(100.0 * (gaps <= 0).mean()) if len(gaps) else float("nan")


def compare_runs(db: sqlite_utils.Database, dataset: str, run_a: str, run_b: str) -> pd.DataFrame:
    """Per category: how often the runs agree on correctness, and McNemar's exact test."""
    a, b = item_table(db, dataset, run_a), item_table(db, dataset, run_b)
    joined = a[["item", "category", "correct"]].merge(b[["item", "correct"]], on="item", suffixes=("_a", "_b"))
    rows = []
    for category, part in [*joined.groupby("category"), ("(all)", joined)]:
        both = int((part.correct_a & part.correct_b).sum())
        only_a = int((part.correct_a & ~part.correct_b).sum())
        only_b = int((~part.correct_a & part.correct_b).sum())
        neither = int((~part.correct_a & ~part.correct_b).sum())
        test = mcnemar([[both, only_a], [only_b, neither]], exact=True)
        rows.append({"category": category, "n": len(part), "both right": both, f"only {run_a}": only_a, f"only {run_b}": only_b,
                     "both wrong": neither, "agreement %": 100.0 * (both + neither) / max(len(part), 1), "McNemar p": float(test.pvalue)})
    return pd.DataFrame(rows)


PATTERNS = ("wrong for A", "wrong for A, right for B", "right for A, wrong for B", "wrong for both")


def failures(
    table_a: pd.DataFrame, table_b: pd.DataFrame | None = None, *, pattern: str = "wrong for A",
    category: str | None = None, page: int = 0, page_size: int = 20,
) -> tuple[pd.DataFrame, int]:
    """Items (rows of `item_table`) matching a correctness pattern, worst margin first: one page and the total."""
    table = table_a
    if table_b is not None:
        table = table_a.merge(table_b[["item", "correct"]].rename(columns={"correct": "correct_b"}), on="item")
    mask = _pattern_mask(table, pattern)
    if category:
        mask &= table["category"] == category
    chosen = table[mask]
    gap = next((c for c in chosen.columns if c.startswith("s(") or ":" in c), None)
    if gap is not None:
        chosen = chosen.sort_values(gap)
    return chosen.iloc[page * page_size:(page + 1) * page_size], len(chosen)


def _pattern_mask(table: pd.DataFrame, pattern: str) -> pd.Series:
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}; expected one of {PATTERNS}")
    wrong_a = ~table["correct"]
    if pattern == "wrong for A":
        return wrong_a
    if "correct_b" not in table:
        raise ValueError(f"pattern {pattern!r} needs a second run")
    right_b = table["correct_b"]
    return {"wrong for A, right for B": wrong_a & right_b, "right for A, wrong for B": ~wrong_a & ~right_b, "wrong for both": wrong_a & ~right_b}[pattern]


def marked_difference(positive: str, negative: str) -> tuple[str, str]:
    """Both captions with the words the other lacks in [brackets] (plain text, no markup).

    >>> marked_difference("a red cup on a table", "a blue cup on a table")
    ('a [red] cup on a table', 'a [blue] cup on a table')
    """
    a, b = positive.split(), negative.split()
    plain = lambda w: re.sub(r"\W", "", w.lower())  # noqa: E731
    in_a, in_b = {plain(w) for w in a}, {plain(w) for w in b}
    mark = lambda words, other: " ".join(f"[{w}]" if plain(w) not in other else w for w in words)  # noqa: E731
    return mark(a, in_b), mark(b, in_a)

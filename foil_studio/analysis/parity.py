"""Do two runs decide alike? The parity report of one dataset's items under two runs (the same
model in bf16 and in fp32, say): the items whose decision flips, with both runs' margins, and the
change of the benchmark's headline metric with a paired bootstrap interval.

A decision is what the benchmark reads off the scores: right or wrong under the benchmark's tie
rule, and for runs with scores the sign of every score gap (which caption or image each
comparison prefers, ties included), so a flip inside a BiVLC group that leaves the group wrong
still shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import sqlite_utils

from foil_studio.analysis import metrics as m
from foil_studio.analysis.inspection import gap_columns, run_table
from foil_studio.analysis.results import BOOTSTRAP, Run, load_run, run_family, source_format


@dataclass(frozen=True)
class Parity:
    """The parity of run B against run A on the items both scored."""

    dataset: str
    run_a: str
    run_b: str
    n_items: int
    metric: str  # the benchmark's name of its headline metric
    value_a: float
    value_b: float
    change_interval: tuple[float, float]  # 95% paired bootstrap interval of value_b - value_a
    flips: pd.DataFrame  # item, category, correct A, correct B, then each gap under A and under B

    @property
    def change(self) -> float:
        """The headline metric of B minus that of A, in percentage points."""
        return self.value_b - self.value_a

    def to_dict(self) -> dict[str, Any]:
        """Plain data for `./foil parity --json`."""
        return {
            "dataset": self.dataset,
            "run_a": self.run_a,
            "run_b": self.run_b,
            "n_items": self.n_items,
            "metric": self.metric,
            "value_a": self.value_a,
            "value_b": self.value_b,
            "change": self.change,
            "change_interval": list(self.change_interval),
            "n_flips": len(self.flips),
            "flips": self.flips.to_dict("records"),
        }


def parity(
    db: sqlite_utils.Database,
    dataset: str,
    run_a: str,
    run_b: str,
    *,
    subset: str | None = None,
    n_boot: int = BOOTSTRAP,
    seed: int = 0,
) -> Parity:
    """The parity report of `run_b` against `run_a` on `dataset` (on a named subset of its items)."""
    ties = source_format(db, dataset).ties
    columns_a, columns_b = load_run(db, dataset, run_a, subset), load_run(db, dataset, run_b, subset)
    shared = np.intersect1d(columns_a.item_ids, columns_b.item_ids)
    credits_a, credits_b = headline_credits(columns_a, ties, shared), headline_credits(columns_b, ties, shared)
    metric = headline_name(db, dataset, columns_a)
    flips = decision_flips(run_table(columns_a, ties), run_table(columns_b, ties))
    return Parity(
        dataset,
        run_a,
        run_b,
        len(shared),
        metric,
        m.percent(credits_a),
        m.percent(credits_b),
        difference_interval(credits_a, credits_b, n_boot=n_boot, seed=seed),
        flips,
    )


def decision_flips(table_a: pd.DataFrame, table_b: pd.DataFrame) -> pd.DataFrame:
    """The items of two `run_table`s whose decision differs (right or wrong, or the sign of any
    gap both have), smallest margin under A first."""
    gaps = [g for g in gap_columns(table_a) if g in table_b]
    joined = table_a[["item", "category", "correct", *gaps]].merge(
        table_b[["item", "correct", *gaps]], on="item", suffixes=(" A", " B")
    )
    differs = joined["correct A"] != joined["correct B"]
    for gap in gaps:
        differs |= np.sign(joined[f"{gap} A"]) != np.sign(joined[f"{gap} B"])
    flipped = joined[differs]
    if gaps:
        flipped = flipped.iloc[np.argsort(np.abs(flipped[f"{gaps[0]} A"].to_numpy()), kind="stable")]
    return flipped[
        ["item", "category", "correct A", "correct B", *[f"{g} {r}" for g in gaps for r in "AB"]]
    ].reset_index(drop=True)


def headline_credits(run: Run, ties: str, items: np.ndarray) -> np.ndarray:
    """Each of `items`' credit on the run's headline metric under the tie rule (1 right, 0 wrong,
    0.5 for a half-counted tie), in the order of `items`."""
    credits = run_family(run).credits(run, ties)
    position = {item: i for i, item in enumerate(run.item_ids)}
    return credits[[position[item] for item in items]]


def headline_name(db: sqlite_utils.Database, dataset: str, run: Run) -> str:
    """The benchmark's own name of the headline metric of a run's family."""
    headline = run_family(run).headline
    return source_format(db, dataset).metric_names.get(headline) or headline


def difference_interval(
    credits_a: np.ndarray, credits_b: np.ndarray, *, n_boot: int = BOOTSTRAP, seed: int = 0
) -> tuple[float, float]:
    """95% bootstrap interval of percent(b) - percent(a), resampling items jointly (paired): the
    percent of the per-item differences, whose few distinct values `metrics.share_interval`
    draws as Multinomial counts.

    >>> difference_interval(np.ones(50), np.ones(50))
    (0.0, 0.0)
    """
    return m.share_interval(
        np.asarray(credits_b, dtype=float) - np.asarray(credits_a, dtype=float), n_boot=n_boot, seed=seed
    )

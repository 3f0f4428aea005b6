"""Benchmark metrics as pure functions of score or outcome arrays, shared by models and humans.

Every comparison is strict (``>``): a tie is a failure, and functions that compare scores also
count the ties they saw, because one popular harness counts ties as correct. Percentages are
floats in [0, 100]. Definitions follow ``shared/docs/domain.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

Bools = NDArray[np.bool_]

BIVLC_KEYS = ("i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i", "tneg2i")
HARD_POSITIVE_KEYS = ("orig_acc", "aug_acc", "brittleness")


@dataclass(frozen=True)
class Comparison:
    """Per-item outcome of `a > b` and how many items tied."""

    wins: Bools
    ties: int


def strictly_greater(a: ArrayLike, b: ArrayLike) -> Comparison:
    """Element-wise `a > b`, counting ties (which count as failures).

    >>> c = strictly_greater([0.3, 0.2, 0.5], [0.1, 0.2, 0.6])
    >>> c.wins.tolist(), c.ties
    ([True, False, False], 1)
    """
    left, right = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return Comparison(left > right, int(np.sum(left == right)))


def percent(outcomes: ArrayLike) -> float:
    """Share of true outcomes in percent; NaN for no items.

    >>> percent([True, False, True, True])
    75.0
    """
    values = np.asarray(outcomes, dtype=bool)
    return float(100.0 * values.mean()) if values.size else float("nan")


def per_category(outcomes: ArrayLike, categories: ArrayLike) -> dict[str, tuple[int, float]]:
    """Category -> (number of items, percent true), categories sorted."""
    values, labels = np.asarray(outcomes, dtype=bool), np.asarray(categories)
    return {str(c): (int(np.sum(labels == c)), percent(values[labels == c])) for c in sorted(set(labels.tolist()))}


def micro_accuracy(correct: ArrayLike) -> float:
    """Accuracy over all items (what BiVLC quotes as "SugarCrepe")."""
    return percent(correct)


def macro_accuracy(correct: ArrayLike, categories: ArrayLike) -> float:
    """Mean of per-category accuracies (SugarCrepe's "Average", ARO's macro accuracy).

    >>> macro_accuracy([True, True, True, False], ["a", "a", "a", "b"])
    50.0
    """
    values, labels = np.asarray(correct, dtype=bool), np.asarray(categories)
    if values.size == 0:
        return float("nan")
    _, codes = np.unique(labels, return_inverse=True)
    return _macro_from_codes(values, codes)


def _macro_from_codes(values: NDArray[np.bool_], codes: NDArray[np.int_]) -> float:
    """Mean over the categories present of their accuracy, from integer category codes."""
    totals = np.bincount(codes)
    present = totals > 0
    hits = np.bincount(codes, weights=values.astype(float), minlength=len(totals))
    return float(100.0 * np.mean(hits[present] / totals[present]))


def bivlc_outcomes(scores: ArrayLike) -> dict[str, Bools]:
    """The seven BiVLC outcomes from scores of shape (n, 2, 2), `scores[:, i, c] = s(C_c, I_i)`.

    >>> s = np.array([[[0.9, 0.1], [0.2, 0.8]]])   # both directions right
    >>> {k: bool(v[0]) for k, v in bivlc_outcomes(s).items()}["group"]
    True
    """
    s = np.asarray(scores, dtype=float)
    return combine_bivlc(
        ipos2t=s[:, 0, 0] > s[:, 0, 1], ineg2t=s[:, 1, 1] > s[:, 1, 0],
        tpos2i=s[:, 0, 0] > s[:, 1, 0], tneg2i=s[:, 1, 1] > s[:, 0, 1],
    )


def bivlc_ties(scores: ArrayLike) -> int:
    """How many of the four BiVLC comparisons over all items were ties."""
    s = np.asarray(scores, dtype=float)
    pairs = ((s[:, 0, 0], s[:, 0, 1]), (s[:, 1, 1], s[:, 1, 0]), (s[:, 0, 0], s[:, 1, 0]), (s[:, 1, 1], s[:, 0, 1]))
    return sum(strictly_greater(a, b).ties for a, b in pairs)


def combine_bivlc(*, ipos2t: ArrayLike, ineg2t: ArrayLike, tpos2i: ArrayLike, tneg2i: ArrayLike) -> dict[str, Bools]:
    """I2T, T2I and Group from the four directional outcomes (models and humans alike)."""
    parts = {k: np.asarray(v, dtype=bool) for k, v in
             {"ipos2t": ipos2t, "ineg2t": ineg2t, "tpos2i": tpos2i, "tneg2i": tneg2i}.items()}
    i2t = parts["ipos2t"] & parts["ineg2t"]
    t2i = parts["tpos2i"] & parts["tneg2i"]
    return {"i2t": i2t, "t2i": t2i, "group": i2t & t2i, **parts}


def hard_positive_outcomes(s_c: ArrayLike, s_cn: ArrayLike, s_cp: ArrayLike) -> dict[str, Bools]:
    """Original and augmented accuracy and brittleness per item (seed 004).

    >>> o = hard_positive_outcomes([0.9, 0.9], [0.5, 0.5], [0.8, 0.1])
    >>> [o[k].tolist() for k in ("orig_acc", "aug_acc", "brittleness")]
    [[True, True], [True, False], [False, True]]
    """
    c, cn, cp = (np.asarray(x, dtype=float) for x in (s_c, s_cn, s_cp))
    original = c > cn
    return {
        "orig_acc": original,
        "aug_acc": original & (cp > cn),
        "brittleness": (original & (cn > cp)) | ((cp > cn) & (cn > c)),
    }


def recall_at_k(scores: ArrayLike, k: int) -> Bools:
    """Per item: is the true caption (column 0) among the top k, ties ranked against it?

    >>> recall_at_k([[0.5, 0.9, 0.1, 0.2], [0.5, 0.5, 0.1, 0.2]], 1).tolist()
    [False, False]
    """
    s = np.asarray(scores, dtype=float)
    rank = np.sum(s[:, 1:] >= s[:, :1], axis=1)  # negatives at or above the positive
    return rank < k


def _percentile_interval(values: NDArray[np.float64], level: float) -> tuple[float, float]:
    if np.all(np.isnan(values)):
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2 * 100
    return (float(np.nanpercentile(values, tail)), float(np.nanpercentile(values, 100 - tail)))


def share_interval(outcomes: ArrayLike, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Bootstrap percentile interval of `percent(outcomes)`, in O(n_boot) time.

    Resampling n items with replacement draws a Binomial(n, share) number of true outcomes, so
    the counts are drawn directly: the same distribution as resampling items, without
    materialising n_boot resamples of n indices (which took most of a page render at 100k items).
    """
    values = np.asarray(outcomes, dtype=bool)
    if values.size == 0 or n_boot == 0:
        return (float("nan"), float("nan"))
    hits = np.random.default_rng(seed).binomial(values.size, values.mean(), size=n_boot)
    return _percentile_interval(100.0 * hits / values.size, level)


def macro_interval(outcomes: ArrayLike, categories: ArrayLike, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Bootstrap percentile interval of `macro_accuracy`, in O(n_boot x categories) time.

    A resample holds Multinomial(n, category shares) items per category and, given that count,
    Binomial(count, category accuracy) correct ones; categories a resample misses are left out
    of its mean, as `macro_accuracy` does.
    """
    values, labels = np.asarray(outcomes, dtype=bool), np.asarray(categories)
    if values.size == 0 or n_boot == 0:
        return (float("nan"), float("nan"))
    _, codes = np.unique(labels, return_inverse=True)
    sizes = np.bincount(codes)
    accuracy = np.bincount(codes, weights=values.astype(float)) / sizes
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(values.size, sizes / values.size, size=n_boot)
    hits = rng.binomial(counts, accuracy)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(counts > 0, hits / counts, np.nan)
    return _percentile_interval(100.0 * np.nanmean(shares, axis=1), level)


def summarize(
    outcomes: Mapping[str, ArrayLike],
    categories: ArrayLike,
    *,
    macro: tuple[str, str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Overall and per-category percentages of every outcome, with bootstrap intervals.

    `macro` = (outcome, key) also reports the mean over categories of `outcome` under `key`.

    >>> summary = summarize({"accuracy": [True, True, True, False]}, ["a", "a", "a", "b"], macro=("accuracy", "macro"), n_boot=10)
    >>> summary["metrics"], summary["by_category"]["b"]
    ({'accuracy': 75.0, 'macro': 50.0}, {'n': 1, 'accuracy': 0.0})
    """
    arrays = {k: np.asarray(v, dtype=bool) for k, v in outcomes.items()}
    labels = np.asarray(categories)
    metrics = {k: percent(v) for k, v in arrays.items()}
    intervals = {k: share_interval(v, n_boot=n_boot, seed=seed) for k, v in arrays.items()}
    if macro is not None:
        source, key = macro
        metrics[key] = macro_accuracy(arrays[source], labels)
        intervals[key] = macro_interval(arrays[source], labels, n_boot=n_boot, seed=seed)
    by_category: dict[str, dict[str, Any]] = {}
    category_intervals: dict[str, dict[str, tuple[float, float]]] = {}
    for number, category in enumerate(sorted(set(labels.tolist()))):
        mask = labels == category
        by_category[str(category)] = {"n": int(mask.sum()), **{k: percent(v[mask]) for k, v in arrays.items()}}
        category_intervals[str(category)] = {
            k: share_interval(v[mask], n_boot=n_boot, seed=seed + 1 + number) for k, v in arrays.items()
        }
    return {"n": int(len(labels)), "metrics": metrics, "by_category": by_category, "intervals": intervals,
            "category_intervals": category_intervals}


CHANCE = {
    "accuracy_micro": 50.0, "accuracy_macro": 50.0, "macro_accuracy": 50.0, "accuracy": 50.0,
    "accuracy_reported": 50.0, "i2t": 25.0, "t2i": 25.0, "group": 100 / 6, "ipos2t": 50.0,
    "ineg2t": 50.0, "tpos2i": 50.0, "tneg2i": 50.0, "orig_acc": 50.0, "aug_acc": 100 / 3,
    "brittleness": 100 / 3,
}


def chance_level(key: str, n_options: int | None = None) -> float | None:
    """Random-guess level of a metric in percent (recall@k needs the number of captions).

    >>> round(chance_level("group"), 2), chance_level("recall_at_1", 4)
    (16.67, 25.0)
    """
    if key.startswith("recall_at_") and n_options:
        return min(100.0, 100.0 * int(key.rsplit("_", 1)[1]) / n_options)
    return CHANCE.get(key)

"""Benchmark metrics as pure functions of score or outcome arrays, shared by models and humans.

Every comparison of scores says how a tie counts (``TIE_RULES``): ``wrong`` (a strict ``>``, as
SugarCrepe's ``pos > neg``; the default), ``right`` (an argmax that lists the right answer first,
as CLIP_benchmark and What'sUp) or ``half`` (a fair coin: compound scores such as BiVLC's group
take the expected value, so each tie halves the credit). Outcomes are credits in [0, 1] per item
(true/false when no tie is half-counted); functions that compare scores also count the ties they
saw. Percentages are floats in [0, 100]. Definitions follow ``shared/docs/domain.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

Bools = NDArray[np.bool_]
Credits = NDArray[np.float64]  # per-item credit in [0, 1]

# What a tied comparison is worth under each rule (`--ties`).
TIE_RULES = {"wrong": 0.0, "right": 1.0, "half": 0.5}

BIVLC_KEYS = ("i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i", "tneg2i")


def tie_credit(ties: str) -> float:
    """What one tied comparison is worth under a rule of ``TIE_RULES`` (ValueError names them)."""
    if ties not in TIE_RULES:
        raise ValueError(f"unknown tie rule {ties!r}; expected one of {list(TIE_RULES)}")
    return TIE_RULES[ties]


def credit(a: ArrayLike, b: ArrayLike, ties: str = "wrong") -> Credits:
    """Per item: 1 where `a > b`, 0 where `a < b`, and a tie's worth under the rule.

    >>> credit([0.3, 0.2, 0.5], [0.1, 0.2, 0.6], "half").tolist()
    [1.0, 0.5, 0.0]
    """
    left, right = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.where(left == right, tie_credit(ties), (left > right).astype(float))


def tied(a: ArrayLike, b: ArrayLike) -> NDArray[np.int_]:
    """Per item: 1 where the two scores are equal (to count ties per category)."""
    return (np.asarray(a, dtype=float) == np.asarray(b, dtype=float)).astype(int)


def percent(outcomes: ArrayLike) -> float:
    """Mean credit in percent (the share of true outcomes); NaN for no items.

    >>> percent([True, False, True, True]), percent([1.0, 0.5])
    (75.0, 75.0)
    """
    values = np.asarray(outcomes, dtype=float)
    return float(100.0 * values.mean()) if values.size else float("nan")


def per_category(outcomes: ArrayLike, categories: ArrayLike) -> dict[str, tuple[int, float]]:
    """Category -> (number of items, percent true), categories sorted."""
    values, labels = np.asarray(outcomes, dtype=float), np.asarray(categories)
    return {str(c): (int(np.sum(labels == c)), percent(values[labels == c])) for c in sorted(set(labels.tolist()))}


def micro_accuracy(correct: ArrayLike) -> float:
    """Accuracy over all items (what BiVLC quotes as "SugarCrepe")."""
    return percent(correct)


def macro_accuracy(correct: ArrayLike, categories: ArrayLike) -> float:
    """Mean of per-category accuracies (SugarCrepe's "Average", ARO's macro accuracy).

    >>> macro_accuracy([True, True, True, False], ["a", "a", "a", "b"])
    50.0
    """
    values, labels = np.asarray(correct, dtype=float), np.asarray(categories)
    if values.size == 0:
        return float("nan")
    return _macro_from_codes(values, category_codes(labels)[1])


def category_codes(labels: ArrayLike) -> tuple[list[Any], NDArray[np.intp]]:
    """The distinct labels, sorted, and each label's number among them (`np.unique`'s
    `return_inverse`, by a dict: sorting a million strings took 0.7 s, this 0.1 s)."""
    values = np.asarray(labels).tolist()
    names = sorted(set(values))
    number = {name: index for index, name in enumerate(names)}
    return names, np.fromiter(map(number.__getitem__, values), dtype=np.intp, count=len(values))


def _macro_from_codes(values: NDArray[np.float64], codes: NDArray[np.int_]) -> float:
    """Mean over the categories present of their accuracy, from integer category codes."""
    totals = np.bincount(codes)
    present = totals > 0
    hits = np.bincount(codes, weights=values.astype(float), minlength=len(totals))
    return float(100.0 * np.mean(hits[present] / totals[present]))


def _bivlc_comparisons(scores: ArrayLike) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    s = np.asarray(scores, dtype=float)
    return {
        "ipos2t": (s[:, 0, 0], s[:, 0, 1]),
        "ineg2t": (s[:, 1, 1], s[:, 1, 0]),
        "tpos2i": (s[:, 0, 0], s[:, 1, 0]),
        "tneg2i": (s[:, 1, 1], s[:, 0, 1]),
    }


def bivlc_outcomes(scores: ArrayLike, ties: str = "wrong") -> dict[str, Credits]:
    """The seven BiVLC outcomes from scores of shape (n, 2, 2), `scores[:, i, c] = s(C_c, I_i)`
    (Winoground's text, image and group scores are I2T, T2I and Group).

    >>> s = np.array([[[0.9, 0.1], [0.2, 0.8]]])   # both directions right
    >>> {k: bool(v[0]) for k, v in bivlc_outcomes(s).items()}["group"]
    True
    """
    return combine_bivlc(**{k: credit(a, b, ties) for k, (a, b) in _bivlc_comparisons(scores).items()})


def bivlc_tied(scores: ArrayLike) -> NDArray[np.int_]:
    """Per item: how many of the four BiVLC comparisons were ties."""
    return np.sum([tied(a, b) for a, b in _bivlc_comparisons(scores).values()], axis=0)


def bivlc_ties(scores: ArrayLike) -> int:
    """How many of the four BiVLC comparisons over all items were ties."""
    return int(bivlc_tied(scores).sum())


def combine_bivlc(*, ipos2t: ArrayLike, ineg2t: ArrayLike, tpos2i: ArrayLike, tneg2i: ArrayLike) -> dict[str, Credits]:
    """I2T, T2I and Group from the four directional outcomes (models and humans alike): a
    product of credits, which is the logical and of true/false outcomes."""
    parts = {
        k: np.asarray(v, dtype=float)
        for k, v in {"ipos2t": ipos2t, "ineg2t": ineg2t, "tpos2i": tpos2i, "tneg2i": tneg2i}.items()
    }
    i2t = parts["ipos2t"] * parts["ineg2t"]
    t2i = parts["tpos2i"] * parts["tneg2i"]
    return {"i2t": i2t, "t2i": t2i, "group": i2t * t2i, **parts}


def hard_positive_outcomes(s_c: ArrayLike, s_cn: ArrayLike, s_cp: ArrayLike, ties: str = "wrong") -> dict[str, Credits]:
    """Original and augmented accuracy and brittleness per item (seed 004). Brittleness is not
    an accuracy: its comparisons stay strict whatever the tie rule.

    >>> o = hard_positive_outcomes([0.9, 0.9], [0.5, 0.5], [0.8, 0.1])
    >>> [o[k].tolist() for k in ("orig_acc", "aug_acc", "brittleness")]
    [[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
    """
    c, cn, cp = (np.asarray(x, dtype=float) for x in (s_c, s_cn, s_cp))
    original = credit(c, cn, ties)
    brittle = ((c > cn) & (cn > cp)) | ((cp > cn) & (cn > c))
    return {"orig_acc": original, "aug_acc": original * credit(cp, cn, ties), "brittleness": brittle.astype(float)}


def paraphrase_outcomes(scores: ArrayLike, ties: str = "wrong") -> dict[str, Credits]:
    """SugarCrepe++'s four outcomes per item from scores ``[s(p1,I), s(n,I), s(p2,I)]`` and,
    when present, the text encoder's ``[cos(p1,p2), cos(p1,n), cos(p2,n)]`` after them (TOT).

    ITT: both positives closer to the image than the negative; Image-P1-Neg and Image-P2-Neg one
    positive at a time; TOT (text only): ``cos(p1,p2) > cos(p1,n) and cos(p1,p2) > cos(p2,n)``.

    >>> o = paraphrase_outcomes([[0.3, 0.2, 0.1, 0.9, 0.5, 0.95]])
    >>> {k: v.tolist() for k, v in o.items()}
    {'itt': [0.0], 'image_p1_neg': [1.0], 'image_p2_neg': [0.0], 'tot': [0.0]}
    """
    s = np.asarray(scores, dtype=float)
    p1, p2 = credit(s[:, 0], s[:, 1], ties), credit(s[:, 2], s[:, 1], ties)
    outcomes = {"itt": p1 * p2, "image_p1_neg": p1, "image_p2_neg": p2}
    if s.shape[1] >= 6:
        outcomes["tot"] = text_only_outcome(s[:, 3], s[:, 4], s[:, 5], ties)
    return outcomes


def paraphrase_tied(scores: ArrayLike) -> NDArray[np.int_]:
    """Per item: ties among the comparisons of `paraphrase_outcomes`."""
    s = np.asarray(scores, dtype=float)
    count = tied(s[:, 0], s[:, 1]) + tied(s[:, 2], s[:, 1])
    return count + tied(s[:, 3], s[:, 4]) + tied(s[:, 3], s[:, 5]) if s.shape[1] >= 6 else count


def text_only_outcome(p1_p2: ArrayLike, p1_n: ArrayLike, p2_n: ArrayLike, ties: str = "wrong") -> Credits:
    """TOT from three text-text cosines per item (any sentence encoder).

    >>> text_only_outcome([0.9, 0.9], [0.5, 0.95], [0.4, 0.2]).tolist()
    [1.0, 0.0]
    """
    return credit(p1_p2, p1_n, ties) * credit(p1_p2, p2_n, ties)


def recall_at_k(scores: ArrayLike, k: int, ties: str = "wrong") -> Credits:
    """Per item: is the true caption (column 0) among the top k? A negative tied with it is
    ranked above it (``wrong``), below it (``right``), or the tie is broken at random
    (``half``: the chance that it still ranks within k). NaN negatives (padding) never count.

    >>> recall_at_k([[0.5, 0.9, 0.1, 0.2], [0.5, 0.5, 0.1, 0.2]], 1).tolist()
    [0.0, 0.0]
    >>> recall_at_k([[0.5, 0.5, 0.5, 0.2]], 2, "half").tolist()  # 3 tied, 2 of the 3 places count
    [0.6666666666666666]
    """
    s = np.asarray(scores, dtype=float)
    above = np.sum(s[:, 1:] > s[:, :1], axis=1)
    level = np.sum(s[:, 1:] == s[:, :1], axis=1)
    rule = tie_credit(ties)
    if rule in (0.0, 1.0):
        return ((above + level * (1 - rule)) < k).astype(float)
    return np.clip(k - above, 0, level + 1) / (level + 1)


def retrieval_tied(scores: ArrayLike) -> NDArray[np.int_]:
    """Per item: how many negatives score exactly as the true caption."""
    s = np.asarray(scores, dtype=float)
    return np.sum(s[:, 1:] == s[:, :1], axis=1)


def _percentile_interval(values: NDArray[np.float64], level: float) -> tuple[float, float]:
    if np.all(np.isnan(values)):
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2 * 100
    return (float(np.nanpercentile(values, tail)), float(np.nanpercentile(values, 100 - tail)))


def share_interval(
    outcomes: ArrayLike, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Bootstrap percentile interval of `percent(outcomes)`, in O(n_boot) time.

    Resampling n items with replacement draws a Binomial(n, share) number of true outcomes, so
    the counts are drawn directly: the same distribution as resampling items, without
    materialising n_boot resamples of n indices (which took most of a page render at 100k items).
    Credits other than 0 and 1 (half-counted ties) are drawn the same way, as Multinomial counts
    of each distinct credit.
    """
    values = np.asarray(outcomes, dtype=float)
    if values.size == 0 or n_boot == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    if _binary(values):
        hits = rng.binomial(values.size, values.mean(), size=n_boot)
    else:
        credits, counts = np.unique(values, return_counts=True)
        hits = rng.multinomial(values.size, counts / values.size, size=n_boot) @ credits
    return _percentile_interval(100.0 * hits / values.size, level)


def _binary(values: NDArray[np.float64]) -> bool:
    return bool(np.all((values == 0) | (values == 1)))


def exact_share_interval(outcomes: ArrayLike, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval of the share of true outcomes, in percent (NaN for no items): the
    exact binomial interval, which stays honest where a bootstrap shrinks to a point (2 of 2 right
    resample to 100 to 100 every time).

    >>> [round(x, 2) for x in exact_share_interval([True, True])]
    [15.81, 100.0]
    """
    values = np.asarray(outcomes, dtype=float)
    if values.size == 0:
        return (float("nan"), float("nan"))
    from scipy.stats import binomtest  # here, not at the top: scipy is half of a `foil` command's start-up

    found = binomtest(int(values.sum()), values.size).proportion_ci(confidence_level=level, method="exact")
    return (100.0 * float(found.low), 100.0 * float(found.high))


def macro_interval(
    outcomes: ArrayLike, categories: ArrayLike, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Bootstrap percentile interval of `macro_accuracy`, in O(n_boot x categories) time.

    A resample holds Multinomial(n, category shares) items per category and, given that count,
    Binomial(count, category accuracy) correct ones (with half-counted ties: Multinomial counts
    of each distinct credit); categories a resample misses are left out of its mean, as
    `macro_accuracy` does.
    """
    values = np.asarray(outcomes, dtype=float)
    if values.size == 0 or n_boot == 0:
        return (float("nan"), float("nan"))
    return _macro_interval_of_codes(values, category_codes(categories)[1], n_boot, seed, level)


def _macro_interval_of_codes(
    values: NDArray[np.float64], codes: NDArray[np.intp], n_boot: int, seed: int, level: float = 0.95
) -> tuple[float, float]:
    """`macro_interval` from integer category codes."""
    sizes = np.bincount(codes)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(values.size, sizes / values.size, size=n_boot)
    if _binary(values):
        hits = rng.binomial(counts, np.bincount(codes, weights=values) / sizes)
    else:
        hits = np.stack([_credit_sums(rng, counts[:, c], values[codes == c]) for c in range(len(sizes))], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(counts > 0, hits / counts, np.nan)
    return _percentile_interval(100.0 * np.nanmean(shares, axis=1), level)


def _credit_sums(rng: np.random.Generator, draws: NDArray[np.int_], values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Total credit of `draws[b]` items resampled from `values`, for each resample b."""
    credits, counts = np.unique(values, return_counts=True)
    return rng.multinomial(draws, counts / counts.sum()) @ credits


def summarize(
    outcomes: Mapping[str, ArrayLike],
    categories: ArrayLike,
    *,
    macro: tuple[str, str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    ties: ArrayLike | None = None,
    exact: bool = False,
) -> dict[str, Any]:
    """Overall and per-category percentages of every outcome, with bootstrap intervals.

    `macro` = (outcome, key) also reports the mean over categories of `outcome` under `key`;
    `ties` (tied comparisons per item) adds their number overall and per category; `exact` gives
    outcomes that are each 0 or 1 exact intervals instead of bootstrap ones (`exact_share_interval`,
    the macro mean `macro_exact_interval`).

    >>> summary = summarize({"accuracy": [True, True, True, False]}, ["a", "a", "a", "b"], macro=("accuracy", "macro"), n_boot=10)
    >>> summary["metrics"], summary["by_category"]["b"]
    ({'accuracy': 75.0, 'macro': 50.0}, {'n': 1, 'accuracy': 0.0})
    """  # noqa: E501
    arrays = {k: np.asarray(v, dtype=float) for k, v in outcomes.items()}
    labels = np.asarray(categories)
    tie_counts = None if ties is None else np.asarray(ties, dtype=int)
    metrics = {k: percent(v) for k, v in arrays.items()}
    intervals = {k: _interval(v, exact, n_boot, seed) for k, v in arrays.items()}
    names, codes = category_codes(labels)
    if macro is not None:
        source, key = macro
        metrics[key] = _macro_from_codes(arrays[source], codes) if labels.size else float("nan")
        intervals[key] = _macro_interval(arrays[source], labels, codes, exact, n_boot, seed)
    by_category: dict[str, dict[str, Any]] = {}
    category_intervals: dict[str, dict[str, tuple[float, float]]] = {}
    for number, category in enumerate(names):
        mask = codes == number
        by_category[str(category)] = {"n": int(mask.sum()), **{k: percent(v[mask]) for k, v in arrays.items()}}
        if tie_counts is not None:
            by_category[str(category)]["ties"] = int(tie_counts[mask].sum())
        category_intervals[str(category)] = {
            k: _interval(v[mask], exact, n_boot, seed + 1 + number) for k, v in arrays.items()
        }
    summary = {
        "n": int(len(labels)),
        "metrics": metrics,
        "by_category": by_category,
        "intervals": intervals,
        "category_intervals": category_intervals,
    }
    return summary if tie_counts is None else {**summary, "ties": int(tie_counts.sum())}


def macro_exact_interval(outcomes: ArrayLike, categories: ArrayLike, level: float = 0.95) -> tuple[float, float]:
    """An interval of `macro_accuracy` from 0/1 outcomes that holds at `level` at least: the mean of
    the categories' Clopper-Pearson ends, each at level 1 - (1 - level) / K (Bonferroni: the K
    intervals hold together with probability `level` or more, and then so does their mean).

    >>> [round(x, 2) for x in macro_exact_interval([True, True], ["a", "b"])]
    [1.25, 100.0]
    """
    values, labels = np.asarray(outcomes, dtype=float), np.asarray(categories)
    groups = sorted(set(labels.tolist()))
    if not groups:
        return (float("nan"), float("nan"))
    each = 1 - (1 - level) / len(groups)
    ends = np.array([exact_share_interval(values[labels == c], each) for c in groups])
    return (float(ends[:, 0].mean()), float(ends[:, 1].mean()))


def _interval(values: Credits, exact: bool, n_boot: int, seed: int) -> tuple[float, float]:
    """`summarize`'s interval of one outcome: exact where asked and the outcomes are 0/1, else bootstrap."""
    if exact and values.size and _binary(values):
        return exact_share_interval(values)
    return share_interval(values, n_boot=n_boot, seed=seed)


def _macro_interval(
    values: Credits, labels: NDArray[Any], codes: NDArray[np.intp], exact: bool, n_boot: int, seed: int
) -> tuple[float, float]:
    """`summarize`'s interval of the macro mean: exact where asked and the outcomes are 0/1, else bootstrap."""
    if exact and values.size and _binary(values):
        return macro_exact_interval(values, labels)
    if values.size == 0 or n_boot == 0:
        return (float("nan"), float("nan"))
    return _macro_interval_of_codes(values, codes, n_boot, seed)


CHANCE = {
    "accuracy_micro": 50.0,
    "accuracy_macro": 50.0,
    "macro_accuracy": 50.0,
    "accuracy": 50.0,
    "accuracy_reported": 50.0,
    "i2t": 25.0,
    "t2i": 25.0,
    "group": 100 / 6,
    "ipos2t": 50.0,
    "ineg2t": 50.0,
    "tpos2i": 50.0,
    "tneg2i": 50.0,
    "orig_acc": 50.0,
    "aug_acc": 100 / 3,
    "brittleness": 100 / 3,
    "ITT": 100 / 3,
    "Image-P1-Neg": 50.0,
    "Image-P2-Neg": 50.0,
    "TOT": 100 / 3,
    "text": 25.0,
    "image": 25.0,
    "acc_r": 50.0,
    "acc_r_macro": 50.0,
}


def chance_level(key: str, n_options: int | None = None) -> float | None:
    """Random-guess level of a metric in percent (recall@k needs the number of captions).

    >>> round(chance_level("group"), 2), chance_level("recall_at_1", 4)
    (16.67, 25.0)
    """
    if key == "individual_accuracy" and n_options:  # What'sUp's name for recall at 1
        return 100.0 / n_options
    if key.startswith("recall_at_") and n_options:
        return min(100.0, 100.0 * int(key.rsplit("_", 1)[1]) / n_options)
    return CHANCE.get(key)


def mean_and_standard_error(values: Sequence[float]) -> tuple[float, float]:
    """The mean of `values` and its standard error (sample standard deviation over the square root
    of their number, as ARO reports its figures over seeds; NaN with fewer than two values).

    >>> [round(x, 6) for x in mean_and_standard_error([40.0, 42.0, 44.0])]
    [42.0, 1.154701]
    """
    from scipy.stats import sem

    array = np.asarray(values, dtype=float)
    mean = float(array.mean()) if array.size else float("nan")
    return mean, float(sem(array)) if array.size >= 2 else float("nan")

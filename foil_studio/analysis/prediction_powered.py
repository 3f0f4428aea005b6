"""Prediction-powered benchmark health: people's outcomes on a stratified sample combined with a
predictor's verdict on every item (a VLM judge, one cheap crowd vote, a validator's probability).

The contract (docs/statistics.md, "Prediction-powered estimates"):

* **Data.** In stratum c of N_c items the predictor gives every item a predicted invalid
  probability f_i in [0, 1] (a label is 0 or 1); its mean over the stratum, F_c, is known exactly.
  People decided n_c of the items, drawn at random without replacement: outcome y_i = 1 if
  invalid, 0 if valid or ambiguous.
* **Estimate.** The difference estimator with a power-tuned weight (PPI++, Angelopoulos et al.
  2024; the regression estimator of survey sampling):
  p_c = mean(y) + lambda_c (F_c - mean(f)) over the n_c decided items, lambda_c = cov(y, f) /
  var(f) on them (0 where f does not vary there or fewer than 3 items are decided). The labelled
  items belong to the population whose predictions are all known, so PPI++'s (1 + n / N) factor
  (for an unlabelled set drawn apart) is 1 here, and a census gives the true share exactly.
* **Variance.** (1 - n_c / N_c) s_c^2 / n_c, s_c^2 the residuals' y - lambda_c f variance with
  n_c - 2 degrees of freedom (one spent on lambda_c), plus q (1 - q) with q = 2 / (n_c + 4), two
  disagreements' worth (as Agresti and Coull add two of each outcome): a predictor that matched
  every sampled item is not taken as perfect on the others, nor a handful of disagreements as
  their exact rate (with one, VALSE's actant-swap pieces of 40 were covered 91% of the time).
  For the overall share each stratum's floor is instead four disagreements' worth among all n
  decided items, q = 4 / (n + 8) (`OVERALL_DISAGREEMENTS`): two in every stratum would count
  fourteen among seven categories, and cost a third of the gain at 40 answers each.
* **Interval.** Korn and Graubard's, as for the plain estimates (`health.korn_graubard`): the
  Clopper-Pearson interval on the effective size p (1 - p) / v (p kept within 1 / (n + 2) of the
  edges there); strata combine with weights N_c / N. It is widened by one item (1 / N) on each
  side: the true share moves in steps of one item, which matters when few are left undrawn.
  Where that interval is not narrower than the plain one (`health.stratum_share`,
  `health.stratified_share`), the plain one is reported: a useless predictor never widens it.
* **Worth.** The human answers the reported interval is worth: the fewest answers with which the
  plain design's exact interval is no wider (`worth`, never more than the items there are); n where
  the plain interval is reported. The leaderboard, whose intervals are bootstrapped, keeps
  n (w_plain / w_reported)^2 (`worth_of_widths`).

Pure functions of arrays; `annotate.health` reads the outcomes and predictions off the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from foil_studio.analysis.health import (
    LEVEL,
    Share,
    effective_size,
    exact_interval,
    korn_graubard,
    stratified_share,
    stratified_variance,
    stratum_share,
)

OVERALL_DISAGREEMENTS = 4  # the overall share's variance floor, in disagreements among all decided items
# The fewest decided items of a stratum its power weight is fitted from: at 10 per category a predictor
# calibrated for a 10% share, used at 30%, had the overall interval cover 0.933 of the time (0.977 with
# the plain estimate there; 0.959 at 20 per category; bench/health_adversarial.py).
FITTED_FROM = 20


def _floats(values: Any) -> np.ndarray:
    """Outcomes, predictions or credits as an array of floats (they may come as 0/1 or booleans)."""
    return np.asarray(values, dtype=float)


@dataclass(frozen=True)
class Powered:
    """One prediction-powered share beside the plain one: which is reported (`share`), the power
    weight, and what the predictor did on the decided items (`outcomes`, `predicted`); per stratum
    (`counts`) the outcomes counted, the decided items and the items, from which the reported
    interval's worth in human answers follows."""

    share: Share  # the reported interval: `powered` where narrower, else `plain`
    plain: Share
    powered: Share
    variance: float  # the prediction-powered estimate's design variance
    weight: float | None  # lambda (None for strata combined: each has its own)
    outcomes: np.ndarray = field(compare=False, repr=False)  # people's, on the decided items of every stratum
    predicted: np.ndarray = field(compare=False, repr=False)  # the predictor's, on the same items
    counts: tuple[list[int], list[int], list[int]] = field(compare=False, repr=False)

    @property
    def used(self) -> bool:
        """Whether the prediction-powered interval is the one reported."""
        return self.share is self.powered

    @property
    def agreement(self) -> float:
        """The share of decided items where the predictor (f >= 0.5 as invalid) and people agree."""
        return float(np.mean((self.predicted >= 0.5) == (self.outcomes == 1)))

    @property
    def ranking(self) -> float | None:
        """How well the predictions rank the decided items (`ranking_auc`); None where people's
        outcomes do not vary there."""
        return ranking_auc(self.outcomes, self.predicted)

    @cached_property
    def worth(self) -> float:
        """The human answers the reported interval is worth (`worth`); computed when first asked, as
        each exact interval it tries costs a bisection."""
        return worth(self.share, *self.counts)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: both intervals, which one is reported, and the predictor's figures: its
        ranking (AUC) and calibration (mean prediction beside the observed share) on the decided
        items, and its thresholded agreement."""
        ranking = self.ranking
        return {
            "reported": "prediction-powered" if self.used else "plain",
            "prediction_powered": self.powered.as_dict(),
            "plain": self.plain.as_dict(),
            "variance": self.variance,
            "weight": None if self.weight is None else round(self.weight, 4),
            "ranking_auc": None if ranking is None else round(ranking, 4),
            "mean_prediction": round(float(np.mean(self.predicted)), 4),
            "observed_share": round(float(np.mean(self.outcomes)), 4),
            "agreement": round(self.agreement, 4),
            "worth_human_answers": round(self.worth, 1),
        }


def ranking_auc(outcomes: np.ndarray, predicted: np.ndarray) -> float | None:
    """The area under the ROC curve of the predictions against people's outcomes (scikit-learn's): the
    chance that a random counted item is predicted above a random other one, ties half; 0.5 is no
    ranking, 1 a perfect one whatever the calibration. None where the outcomes do not vary.

    >>> ranking_auc(np.array([1, 0, 0, 1]), np.array([0.8, 0.6, 0.6, 0.8]))
    1.0
    """
    from sklearn.metrics import roc_auc_score  # here: a second of start-up for every `foil` command

    y = _floats(outcomes)
    if len(np.unique(y)) < 2:
        return None
    return float(roc_auc_score(y, _floats(predicted)))


@dataclass(frozen=True)
class _Stratum:
    estimate: float
    variance: float
    weight: float


def power_weight(outcomes: np.ndarray, predicted: np.ndarray) -> float:
    """PPI++'s weight for a mean when the population's predictions are all known: cov(y, f) / var(f)
    over the decided items (the least-squares slope of y on f); 0 where it cannot be estimated, or
    from fewer than `FITTED_FROM` items (the plain estimate then).

    >>> power_weight(np.tile([0.0, 1.0, 1.0, 0.0], 5), np.tile([0.0, 1.0, 1.0, 0.0], 5))
    1.0
    """
    y, f = _floats(outcomes), _floats(predicted)
    if len(y) < FITTED_FROM or np.ptp(f) == 0:
        return 0.0
    return float(np.cov(y, f, ddof=1)[0, 1] / np.var(f, ddof=1))


def disagreements_worth(count: int, n: int) -> float:
    """q (1 - q) with q = k / (n + 2k): `count` (k) disagreements' worth of residual variance in a
    sample of n, the floor the variances add (as Agresti and Coull add k of each outcome).

    >>> round(disagreements_worth(2, 36), 4)
    0.0475
    """
    q = count / (n + 2 * count)
    return q * (1 - q)


def _stratum(
    y: np.ndarray, f: np.ndarray, population_mean: float, size: int, smallest: float | None = None
) -> _Stratum:
    """A stratum's difference estimate and its design variance from people's outcomes y and the
    predictions f on its decided items, as floats (`smallest`: the floor added to the residual
    variance, two disagreements' worth among its own items unless given)."""
    n = len(y)
    weight = power_weight(y, f)
    estimate = float(np.mean(y) + weight * (population_mean - np.mean(f)))
    if weight == 0:
        # the predictions carry nothing here (no spread on the decided items, or no outcome that varies
        # with them): the plain design's variance, smoothed at an edge as the plain interval is; the
        # residual spread with a floor set for all decided items would pass off a stratum that showed
        # no invalid item as nearly certain, whatever the predictions say of its other items
        variance, _ = stratified_variance(y.sum(keepdims=True), np.array([float(n)]), np.array([float(size)]))
        return _Stratum(estimate, variance, weight)
    residuals = y - weight * f
    floor = disagreements_worth(2, n) if smallest is None else smallest
    # n - 2 degrees of freedom, one spent on the weight; a weight is fitted from FITTED_FROM items or more
    spread = float(np.sum((residuals - residuals.mean()) ** 2)) / (n - 2) + floor
    return _Stratum(estimate, (1 - n / size) * spread / n, weight)


def _check(outcomes: np.ndarray, predicted: np.ndarray, population: np.ndarray) -> None:
    if len(outcomes) != len(predicted):
        raise ValueError(f"{len(outcomes)} outcomes but {len(predicted)} predictions of the decided items")
    if len(outcomes) < 1:
        raise ValueError("a stratum needs at least one decided item for an estimate")
    if len(outcomes) > len(population):
        raise ValueError(f"{len(outcomes)} decided items in a stratum of {len(population)}")
    for name, values in (("predictions", population), ("decided items' predictions", predicted)):
        if not np.all((values >= 0) & (values <= 1)):
            raise ValueError(f"{name} must lie between 0 and 1 (a probability or a 0/1 label)")
    if not np.all((outcomes == 0) | (outcomes == 1)):
        raise ValueError("outcomes must be 0 (valid or ambiguous) or 1 (invalid)")


def powered_stratum_share(outcomes: Any, predicted: Any, population: Any, level: float = LEVEL) -> Powered:
    """One stratum's invalid share from people's `outcomes` (1 invalid, 0 otherwise) on the decided
    items, the predictor's values on those same items (`predicted`) and on every item of the stratum
    (`population`, the decided ones included).

    >>> decided, every = np.tile([1, 0, 0, 1], 5), np.tile([1, 0, 0, 1, 1, 0, 0, 0], 5)
    >>> found = powered_stratum_share(decided, decided, every)
    >>> round(found.powered.estimate, 3), found.agreement
    (0.375, 1.0)
    """
    y, f, everything = _floats(outcomes), _floats(predicted), _floats(population)
    _check(y, f, everything)
    size, n, invalid = len(everything), len(y), int(y.sum())
    found = _stratum(y, f, float(everything.mean()), size)
    plain = stratum_share(invalid, n, size, level)
    powered = difference_interval(found.estimate, found.variance, n, 1, invalid, size, level)
    reported = powered if _width(powered) < _width(plain) else plain
    return Powered(reported, plain, powered, found.variance, found.weight, y, f, ([invalid], [n], [size]))


def powered_stratified_share(
    outcomes: Mapping[str, Any], predicted: Mapping[str, Any], population: Mapping[str, Any], level: float = LEVEL
) -> Powered:
    """The whole population's invalid share from its strata (each keyed alike in the three maps, as
    in `powered_stratum_share`): weights N_c / N, variances summed with weights squared."""
    strata = list(population)
    if not strata or set(outcomes) != set(strata) or set(predicted) != set(strata):
        raise ValueError("outcomes, predictions of the decided items and of every item need the same strata")
    ys = [_floats(outcomes[c]) for c in strata]
    fs = [_floats(predicted[c]) for c in strata]
    everything = [_floats(population[c]) for c in strata]
    for y, f, whole in zip(ys, fs, everything, strict=True):
        _check(y, f, whole)
    sizes = np.array([len(whole) for whole in everything], dtype=float)
    weights = sizes / sizes.sum()
    # the floor of the whole sample: four disagreements' worth among all its decided items (a floor
    # per category would count two in every one, which at 40 answers each costs a third of the gain)
    floor = disagreements_worth(OVERALL_DISAGREEMENTS, sum(len(y) for y in ys))
    found = [
        _stratum(y, f, float(whole.mean()), len(whole), floor) for y, f, whole in zip(ys, fs, everything, strict=True)
    ]
    estimate = float(weights @ [s.estimate for s in found])
    variance = float(weights**2 @ [s.variance for s in found])
    invalid, n = int(sum(y.sum() for y in ys)), int(sum(len(y) for y in ys))
    plain = stratified_share([int(y.sum()) for y in ys], [len(y) for y in ys], [len(w) for w in everything], level)
    powered = difference_interval(estimate, variance, n, len(strata), invalid, int(sizes.sum()), level)
    reported = powered if _width(powered) < _width(plain) else plain
    counts = ([int(y.sum()) for y in ys], [len(y) for y in ys], [len(w) for w in everything])
    return Powered(reported, plain, powered, variance, None, np.concatenate(ys), np.concatenate(fs), counts)


def difference_interval(
    estimate: float, variance: float, n: int, n_strata: int, invalid: int, size: int, level: float = LEVEL
) -> Share:
    """Korn and Graubard's interval on the difference estimate (clipped to [0, 1]); a census is exact."""
    clipped = min(max(estimate, 0.0), 1.0)
    if variance <= 0:
        return Share(clipped, clipped, clipped, invalid, n, size)
    centre = min(max(clipped, 1 / (n + 2)), 1 - 1 / (n + 2))  # p (1 - p) never 0 at an edge
    low, high = korn_graubard(clipped, variance, n, n_strata, level, centre=centre)
    # the true share moves in steps of one item, which an interval built for smooth estimates does
    # not see when few items are left undrawn: one step more on each side
    step = 1 / size
    return Share(clipped, max(float(low) - step, 0.0), min(float(high) + step, 1.0), invalid, n, size)


def _width(share: Share) -> float:
    return share.high - share.low


def worth(
    reported: Share, invalid: Sequence[int], decided: Sequence[int], sizes: Sequence[int], level: float = LEVEL
) -> float:
    """The human answers the reported interval is worth: the fewest answers m with which a plain
    design (every stratum's decided items scaled alike, each stratum's observed share kept) gives
    an exact interval no wider (`plain_width`); the answers given where the reported interval is
    not narrower, and never more than the items there are (a census is exact).

    >>> worth(Share(0.3, 0.25, 0.35, 30, 100, 1000), [30], [100], [1000])
    250.0
    """
    given = int(sum(decided))
    wanted = _width(reported)
    widest = plain_width(given, invalid, decided, sizes, level)
    if wanted >= widest:
        return float(given)
    low, high = _bracket(wanted, widest, invalid, decided, sizes, level)
    while high - low > 1:  # the plain width at `low` is wider than wanted, at `high` not
        middle = (low + high) // 2
        if plain_width(middle, invalid, decided, sizes, level) <= wanted:
            high = middle
        else:
            low = middle
    return float(high)


def _bracket(
    wanted: float, widest: float, invalid: Sequence[int], decided: Sequence[int], sizes: Sequence[int], level: float
) -> tuple[int, int]:
    """Answers (low, high) between which the plain width falls from `widest` (at the answers given) to
    `wanted`: up to a census, narrowed for one stratum around where Clopper-Pearson's interval on the
    effective size (`health.effective_size`, many sizes at once) reaches it, since each exact interval
    there costs a bisection of its own; the square-root rule's answers, with a margin, bound that scan."""
    given, population = int(sum(decided)), int(sum(sizes))
    if len(decided) > 1:
        return given, population
    answers = np.arange(given, min(population, int(2 * given * (widest / wanted) ** 2) + 2))
    effective = effective_size(answers, population)
    low, high = exact_interval(invalid[0] / decided[0] * effective, effective, level)
    reached = np.flatnonzero(high - low <= wanted)
    guess = int(answers[reached[0]]) if len(reached) else population
    margin = max(5, guess // 10)
    below, above = max(given, guess - margin), min(population, guess + margin)
    if plain_width(below, invalid, decided, sizes, level) <= wanted:
        below = given
    if plain_width(above, invalid, decided, sizes, level) > wanted:
        above = population
    return below, above


def plain_width(
    answers: int, invalid: Sequence[int], decided: Sequence[int], sizes: Sequence[int], level: float = LEVEL
) -> float:
    """The plain interval's width with `answers` decided items in all, spread over the strata as
    `decided` is (at most each stratum's size) and each stratum's share `invalid / decided` kept:
    the exact hypergeometric interval for one stratum, Korn and Graubard's for several."""
    x, n, size = _floats(invalid), _floats(decided), _floats(sizes)
    scaled = np.minimum(n * answers / n.sum(), size)
    if len(n) == 1:
        m = max(int(round(scaled[0])), 1)
        share = stratum_share(int(round(x[0] / n[0] * m)), m, int(size[0]), level)
    else:
        at_least_one = np.maximum(scaled, 1)
        share = stratified_share((x / n * at_least_one).tolist(), at_least_one.tolist(), size.tolist(), level)
    return _width(share)


def worth_of_widths(n: int, plain_width: float, powered_width: float | None, items: int) -> float:
    """The answers an interval of `powered_width` is worth where the plain one of n answers has
    `plain_width` and no exact interval can be recomputed at other sizes (the leaderboard's
    bootstrap): n (w_plain / w)^2, widths shrinking as 1 / sqrt(n), never more than the `items`
    there are; None, not narrower, or 0 gives n."""
    if powered_width is None or not 0 < powered_width < plain_width:
        return float(n)
    return min(round(n * (plain_width / powered_width) ** 2, 6), float(items))


@dataclass(frozen=True)
class PoweredAccuracy:
    """Each run's accuracy on valid items, prediction-powered, with its interval and variance
    (`annotate.health.powered` sets it beside `health.valid_accuracy`'s and reports the narrower)."""

    runs: list[str]
    estimate: np.ndarray  # per run, prediction-powered
    low: np.ndarray
    high: np.ndarray
    variance: np.ndarray
    difference: dict[tuple[str, str], tuple[float, float, float]]  # (a, b) -> a less b, low, high


def powered_valid_accuracy(
    outcomes: Mapping[str, Any],
    predicted: Mapping[str, Any],
    credits: Mapping[str, Any],
    population: Mapping[str, Any],
    population_credits: Mapping[str, Any],
    runs: Sequence[str],
    level: float = LEVEL,
) -> PoweredAccuracy:
    """Accuracy on valid items per run from people's outcomes on the decided items (`outcomes[c]`: 1
    valid, 0 invalid or ambiguous), the predicted probability that an item is valid on those items
    (`predicted[c]`) and on every item (`population[c]`), and each run's credit on the decided items
    (`credits[c]`, items by runs) and on every item (`population_credits[c]`).

    A ratio of two difference estimators (the valid items' credit over the valid items), with one
    power-tuned weight per category for the ratio's linearised variable v (c - A) and its
    prediction g (c - A); the variance is the linearised one, smoothed as the shares are (two
    disagreements' worth), and Korn and Graubard's interval is taken on it."""
    strata = list(population)
    parts = [
        (
            _floats(outcomes[c]),
            _floats(predicted[c]),
            _floats(credits[c]).reshape(len(outcomes[c]), len(runs)),
            _floats(population[c]),
            _floats(population_credits[c]).reshape(len(population[c]), len(runs)),
        )
        for c in strata
    ]
    for y, f, _, whole, _ in parts:
        _check(1 - y, 1 - f, 1 - whole)
    estimate, variance = np.zeros(len(runs)), np.zeros(len(runs))
    for r in range(len(runs)):
        estimate[r], variance[r] = _fit(parts, r)
    n = sum(len(y) for y, *_ in parts)
    low, high = np.zeros(len(runs)), np.zeros(len(runs))
    for r in range(len(runs)):
        clipped = min(max(float(estimate[r]), 0.0), 1.0)
        centre = min(max(clipped, 1 / (n + 2)), 1 - 1 / (n + 2))
        if variance[r] > 0:
            a, b = korn_graubard(clipped, variance[r], n, len(strata), level, centre=centre)
            low[r], high[r] = float(a), float(b)
        else:
            low[r] = high[r] = clipped
    differences = {
        (runs[a], runs[b]): _difference(parts, a, b, n, len(strata), level)
        for a in range(len(runs))
        for b in range(a + 1, len(runs))
    }
    return PoweredAccuracy(list(runs), estimate, low, high, variance, differences)


def _fit(parts: Sequence[Part], run: int) -> tuple[float, float]:
    """One run's prediction-powered ratio and its linearised variance; the weights 0 (the plain
    ratio) where the tuned ones leave no estimate (an estimated valid total of 0 or less, which a
    weight fitted to a handful of nonzero credits can give)."""
    plain = _ratio(parts, run, None)
    weights = [_ratio_weight(y, f, c[:, run], plain) for y, f, c, _, _ in parts]
    estimate = _ratio(parts, run, weights)
    if not np.isfinite(estimate):
        weights = [0.0] * len(parts)
        estimate = plain
    return estimate, _ratio_variance(parts, run, weights, estimate)


def _difference(
    parts: Sequence[Part], a: int, b: int, n: int, n_strata: int, level: float
) -> tuple[float, float, float]:
    """Run a's accuracy on valid items less run b's, the ratio of the paired credit difference
    c_a - c_b (its own power-tuned weights), with a t interval on n - K degrees of freedom (a
    difference has no p (1 - p) for Korn and Graubard's), clipped to [-1, 1]."""
    from scipy import stats  # here, not at the top: it would be half of every `foil` command's start-up

    paired = [(y, f, c[:, [a]] - c[:, [b]], whole, wc[:, [a]] - wc[:, [b]]) for y, f, c, whole, wc in parts]
    estimate, variance = _fit(paired, 0)
    half = float(stats.t.ppf(1 - (1 - level) / 2, max(n - n_strata, 1))) * float(np.sqrt(max(variance, 0.0)))
    return estimate, max(estimate - half, -1.0), min(estimate + half, 1.0)


Part = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _ratio(parts: Sequence[Part], run: int, weights: Sequence[float] | None) -> float:
    """Sum over strata of the valid items' credit over the valid items, each total a difference
    estimate with the stratum's weight (None: the plain ratio estimator, weight 0)."""
    top = bottom = 0.0
    for number, (y, f, c, whole, whole_c) in enumerate(parts):
        weight = 0.0 if weights is None else weights[number]
        scale = len(whole) / len(y)
        top += weight * float(whole @ whole_c[:, run]) + scale * float(np.sum((y - weight * f) * c[:, run]))
        bottom += weight * float(whole.sum()) + scale * float(np.sum(y - weight * f))
    return top / bottom if bottom > 0 else float("nan")


def _ratio_weight(y: np.ndarray, f: np.ndarray, credit: np.ndarray, accuracy: float) -> float:
    """PPI++'s weight for the ratio's linearised variable v (c - A) and its prediction g (c - A)."""
    if not np.isfinite(accuracy):
        return 0.0
    return power_weight(y * (credit - accuracy), f * (credit - accuracy))


def _ratio_variance(parts: Sequence[Part], run: int, weights: Sequence[float], accuracy: float) -> float:
    """The linearised variance of the ratio, each stratum's residual variance with two
    disagreements' worth added, over the estimated valid total squared."""
    powered = valid_total = 0.0
    for (y, f, c, whole, _), weight in zip(parts, weights, strict=True):
        n, size = len(y), len(whole)
        linear = y * (c[:, run] - accuracy)
        residual = linear - weight * f * (c[:, run] - accuracy)
        smallest = disagreements_worth(2, n)
        spent = 2 if weight != 0 else 1
        spread = float(np.sum((residual - residual.mean()) ** 2)) / max(n - spent, 1) + smallest
        powered += size**2 * (1 - n / size) / n * spread
        valid_total += weight * float(whole.sum()) + size / n * float(np.sum(y - weight * f))
    return powered / valid_total**2 if valid_total > 0 else 0.0

"""Benchmark health: what share of a benchmark's negatives are invalid, and the leaderboard on the
valid items, estimated from a stratified random sample that people validated.

The contract (README, "Benchmark health"):

* **Design.** Strata are categories. In stratum c of N_c items, n_c items are drawn at random
  without replacement (several batches drawn one after another from the items not yet drawn
  make one such sample); each drawn item's inclusion probability is n_c / N_c.
* **Outcome.** Each drawn item's validations end valid, invalid or ambiguous (the majority, a tie
  being ambiguous); items not yet decided are left out of n_c.
* **Invalid share of a stratum.** p_c = x_c / n_c with the exact 95% interval for sampling without
  replacement: the K / N_c (K the stratum's invalid items, a whole number) that a test at 2.5% in
  each tail of the hypergeometric distribution of x_c does not reject (a census is exact).
* **Overall share.** p = sum W_c p_c with W_c = N_c / N and Korn and Graubard's (1998) interval as
  R's `survey::svyciprop(method="beta")` computes it: the design variance
  v = sum W_c^2 (1 - f_c) p_c (1 - p_c) / (n_c - 1), the effective size p (1 - p) / v scaled by
  (t_{n-1} / t_{n-K})^2 (K strata), a Clopper-Pearson interval on it. Departures: a stratum
  that showed 0 or n_c invalid items would add no variance, so there (and only there) its share
  in v and in p (1 - p) is (x_c + 1) / (n_c + 2); strata drawn whole add their count, and the
  interval is that of the strata left open (one left open: its exact interval), with an effective
  size of at most their items (the binomial shape on the corrected variance can claim more than
  the undrawn items allow: past half a stratum drawn, or where rare and common strata mix).
* **Accuracy on valid items.** A ratio estimator: sum_c (N_c / n_c) (valid and right) over
  sum_c (N_c / n_c) (valid), each run's credit as its metrics count it (ties by the benchmark's
  rule). Its interval is Clopper-Pearson on the effective size p (1 - p) / v, v the variance of
  stratified bootstrap resamples (McCarthy and Snowden's resample sizes), scaled by the same t
  ratio and at most the valid items drawn (finite-population corrected). Paired differences of
  two runs take percentile intervals of the same resamples, and the share of resamples in which
  their order differs from the published one.
* **Horvitz-Thompson.** Where items were drawn with unequal probabilities pi_i (importance
  sampling), the total of y is sum y_i / pi_i, unbiased whenever every pi_i > 0.

Pure functions of counts and arrays; `annotate.health` reads them off the store.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

LEVEL = 0.95
Stratum = TypeVar("Stratum", bound=Hashable)  # a stratum's key: a category's name, a bin's number
ALLOCATIONS = ("equal", "proportional", "neyman")
OUTCOMES = ("valid", "invalid", "ambiguous")


@dataclass(frozen=True)
class Share:
    """An estimated share with its 95% interval, from `count` of `decided` items (the invalid ones,
    or the ambiguous ones) in a population of `size` (for strata combined, their sums)."""

    estimate: float
    low: float
    high: float
    count: int
    decided: int
    size: int

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: the figures, rounded to four decimals."""
        return {
            "estimate": round(self.estimate, 4),
            "interval": [round(self.low, 4), round(self.high, 4)],
            "count": self.count,
            "decided": self.decided,
            "size": self.size,
        }


def exact_interval(count: Any, n: Any, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson interval of `count` successes in `n` trials (both may be fractional
    effective counts, and arrays).

    >>> low, high = exact_interval(0, 10)
    >>> float(low), round(float(high), 4)
    (0.0, 0.3085)
    """
    from scipy import stats  # here, not at the top: it would be half of every `foil` command's start-up

    count, n = np.asarray(count, dtype=float), np.asarray(n, dtype=float)
    alpha = 1 - level
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(count > 0, stats.beta.ppf(alpha / 2, count, n - count + 1), 0.0)
        high = np.where(count < n, stats.beta.ppf(1 - alpha / 2, count + 1, n - count), 1.0)
    return np.nan_to_num(low, nan=0.0), np.nan_to_num(high, nan=1.0)


def effective_size(n: Any, size: Any) -> np.ndarray:
    """The sample size a binomial interval needs to carry the finite-population correction:
    n (N - 1) / (N - n); infinite for a census.

    >>> round(float(effective_size(10, 10_000)), 3), float(effective_size(50, 100))
    (10.009, 99.0)
    """
    n, size = np.asarray(n, dtype=float), np.asarray(size, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(n < size, n * (size - 1) / np.maximum(size - n, 1e-12), np.inf)


def hypergeometric_interval(count: Any, n: int, size: int, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """The exact interval of a finite population's share from `count` (a number or an array) of `n`
    items drawn without replacement out of `size`: every K / size (K whole) under which drawing
    `count` is in neither tail of the hypergeometric distribution (a tail of at most
    (1 - level) / 2 rejects).

    >>> [float(x) for x in hypergeometric_interval(0, 40, 50)]  # 2 invalid of 50 both go undrawn with p 0.037
    [0.0, 0.04]
    >>> [float(x) for x in hypergeometric_interval(3, 10, 10)]  # a census
    [0.3, 0.3]
    """
    from scipy import stats

    count = np.asarray(count, dtype=int)
    tail = (1 - level) / 2
    everything = np.full(count.shape, size)
    # P(X >= count | K) grows with K and P(X <= count | K) shrinks: each bound is a bisection over K
    low = _first(lambda k: stats.hypergeom.sf(count - 1, size, k, n) > tail, np.zeros(count.shape, int), everything)
    high = _first(lambda k: stats.hypergeom.cdf(count, size, k, n) <= tail, low, everything + 1) - 1
    return low / size, high / size


def _first(holds: Callable[[np.ndarray], np.ndarray], low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Elementwise the smallest k in [low, high) for which `holds(k)` (false, then true as k grows),
    else high."""
    while (open_ := low < high).any():
        middle = (low + high) // 2
        found = holds(middle)
        high = np.where(open_ & found, middle, high)
        low = np.where(open_ & ~found, middle + 1, low)
    return low


def stratum_share(invalid: int, decided: int, size: int, level: float = LEVEL) -> Share:
    """The invalid share of one stratum: `invalid` of `decided` drawn items, of `size` in all, with
    its exact interval for sampling without replacement (`hypergeometric_interval`).

    >>> stratum_share(3, 3, 3).low  # a census is exact
    1.0
    """
    if decided < 1:
        raise ValueError("a stratum needs at least one decided item for an estimate")
    if decided > size or not 0 <= invalid <= decided:
        raise ValueError(f"{invalid} of {decided} decided items in a stratum of {size}")
    low, high = hypergeometric_interval(invalid, decided, size, level)
    return Share(invalid / decided, float(low), float(high), invalid, decided, size)


def stratified_share(
    invalid: Sequence[float],
    decided: Sequence[float],
    sizes: Sequence[float],
    level: float = LEVEL,
    *,
    pseudo: Sequence[float] | None = None,
) -> Share:
    """The invalid share of the whole population from its strata (every one with a decided item):
    the stratified estimate with Korn and Graubard's exact interval (the module's docstring);
    `pseudo` as in `stratified_variance`.

    >>> s = stratified_share([1, 0], [10, 10], [100, 300])
    >>> round(s.estimate, 4), s.size
    (0.025, 400)
    """
    x, n, size = (np.asarray(v, dtype=float) for v in (invalid, decided, sizes))
    if len(n) == 0 or (n < 1).any():
        raise ValueError("every stratum needs at least one decided item for an overall estimate")
    if (n > size).any() or (x < 0).any() or (x > n).any():
        raise ValueError(f"{invalid} of {decided} decided items in strata of {sizes}")
    # each stratum's size x / n summed, then one division: exactly the count over the size at a census
    estimate = float(np.sum(size * x / n) / size.sum())
    total, population = int(n.sum()), int(size.sum())
    if total == population:
        return Share(estimate, estimate, estimate, int(x.sum()), total, population)
    low, high = _interval_past_censuses(x, n, size, level, None if pseudo is None else np.asarray(pseudo, dtype=float))
    return Share(estimate, low, high, int(x.sum()), total, population)


def _interval_past_censuses(
    x: np.ndarray, n: np.ndarray, size: np.ndarray, level: float, pseudo: np.ndarray | None
) -> tuple[float, float]:
    """The interval of the strata not taken whole (Korn and Graubard's, its effective size at most their
    items; the exact one where one is left), plus the known count of those taken whole: a census adds
    no variance, and its share in p (1 - p) would lend the open strata a symmetric interval they do not
    have. Both, and the cap, from the coverage grid at n/N 0.6 to 0.9 (TESTING.md): a rare bin drawn
    in part beside common ones counted whole covered 0.93."""
    open_ = n < size
    known, open_size = float(x[~open_].sum()), float(size[open_].sum())
    xs, ns, sizes = x[open_], n[open_], size[open_]
    if len(xs) == 1:  # one stratum left open: its exact interval (a binomial shape undercovers at high n / N)
        low, high = hypergeometric_interval(round(xs[0]), int(ns[0]), int(sizes[0]), level)
    else:
        estimate = float(np.sum(sizes * xs / ns) / open_size)
        variance, centre = stratified_variance(xs, ns, sizes, None if pseudo is None else pseudo[open_])
        low, high = korn_graubard(estimate, variance, int(ns.sum()), len(ns), level, centre=centre, cap=open_size)
    population = float(size.sum())
    return (known + open_size * float(low)) / population, (known + open_size * float(high)) / population


def stratified_variance(
    invalid: np.ndarray, decided: np.ndarray, sizes: np.ndarray, pseudo: np.ndarray | None = None
) -> tuple[float, float]:
    """The stratified share's design variance sum W_c^2 (1 - f_c) q_c (1 - q_c) / (n_c - 1) and the
    share sum W_c q_c whose p (1 - p) goes with it: q_c = x_c / n_c, but (x_c + a_c) / (n_c + 2 a_c)
    in a stratum that showed 0 or n_c invalid items, which would otherwise add no variance at all;
    a_c = 1 (one more item of each outcome), or `pseudo[c]` (a category's prediction bins share its one).

    >>> variance, centre = stratified_variance(np.array([3.0]), np.array([10.0]), np.array([100.0]))
    >>> round(variance, 6), centre
    (0.021, 0.3)
    """
    edge = (invalid == 0) | (invalid == decided)
    added = np.ones_like(invalid) if pseudo is None else pseudo
    shares = np.where(edge, (invalid + added) / (decided + 2 * added), invalid / decided)
    weights = sizes / sizes.sum()
    # n_c - 1: the sample variance's divisor; a stratum of one decided item is at an edge, smoothed
    spread = shares * (1 - shares) / np.maximum(decided - 1, 1)
    variance = float(np.sum(weights**2 * (1 - decided / sizes) * spread))
    return variance, float(weights @ shares)


def allocate(
    sizes: Mapping[Stratum, int],
    budget: int,
    method: str = "proportional",
    *,
    taken: Mapping[Stratum, int] | None = None,
    spreads: Mapping[Stratum, float] | None = None,
) -> dict[Stratum, int]:
    """How many new items to draw per stratum: `budget` in all, at most the items each stratum
    has not yet given (`taken`). `equal`: the same per stratum; `proportional`: in proportion to
    its size; `neyman`: to N_c S_c, S_c the stratum's spread of what is estimated (`spreads`;
    sqrt(p_c (1 - p_c)) for a share, 0.5 where unknown), which minimises the estimate's variance.
    Rounded by largest remainder; what a full stratum cannot take goes to the others.

    >>> allocate({"a": 100, "b": 300}, 40)
    {'a': 10, 'b': 30}
    >>> allocate({"a": 100, "b": 300}, 40, "neyman", spreads={"a": 0.5, "b": 0.0})
    {'a': 40, 'b': 0}
    """
    if method not in ALLOCATIONS:
        raise ValueError(f"unknown allocation {method!r}; expected one of {list(ALLOCATIONS)}")
    if budget < 0:
        raise ValueError(f"a budget of {budget} items; expected 0 or more")
    taken = taken or {}
    room = {c: max(int(sizes[c]) - int(taken.get(c, 0)), 0) for c in sizes}
    wanted = {c: _allocation_weight(method, sizes[c], (spreads or {}).get(c, 0.5)) for c in sizes}
    result = dict.fromkeys(sizes, 0)
    left = min(budget, sum(room.values()))
    while left > 0:
        open_strata = [c for c in sizes if room[c] > result[c]]
        weights = np.array([wanted[c] for c in open_strata], dtype=float)
        if weights.sum() <= 0:  # nothing left to learn where weights are zero: spread evenly
            weights = np.ones(len(open_strata))
        # rounded so that weights equal up to a common factor (Neyman with equal spreads and
        # proportional) break ties between remainders alike, not by the last bit
        quotas = np.round(left * weights / weights.sum(), 9)
        whole = np.floor(quotas).astype(int)
        for i in np.argsort(-(quotas - whole), kind="stable")[: left - whole.sum()]:
            whole[i] += 1
        for c, extra in zip(open_strata, whole):
            result[c] += min(int(extra), room[c] - result[c])
        left = min(budget, sum(room.values())) - sum(result.values())
    return result


def _allocation_weight(method: str, size: int, spread: float) -> float:
    if method == "equal":
        return 1.0
    if method == "proportional":
        return float(size)
    return float(size) * float(spread)


def smoothed_share(invalid: int, decided: int) -> float:
    """A stratum's share for planning the next draw: (x + 0.5) / (n + 1), never exactly 0 or 1,
    so a stratum with no invalid item yet still gets some of a Neyman allocation; 0.5 with no data."""
    return (invalid + 0.5) / (decided + 1)


@dataclass(frozen=True)
class Leaderboard:
    """Each run's accuracy on valid items with its interval, and the pairwise comparisons."""

    runs: list[str]
    estimate: np.ndarray  # per run
    low: np.ndarray
    high: np.ndarray
    difference: dict[tuple[str, str], tuple[float, float, float]]  # (a, b) -> (a - b, low, high)
    order_flip: dict[tuple[str, str], float]  # (a, b) -> share of resamples ordering them unlike `published`


def valid_accuracy(
    strata: Sequence[str],
    valid: np.ndarray,
    credits: np.ndarray,
    sizes: Mapping[str, int],
    runs: Sequence[str],
    published: Sequence[float] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = LEVEL,
) -> Leaderboard:
    """Accuracy on valid items per run (ratio estimator over strata) with Korn-Graubard intervals on
    the variance of stratified bootstrap resamples (the module's docstring). `strata[i]`, `valid[i]`
    and `credits[i, r]` describe drawn item i (credit of run r: 1 right, 0 wrong, 0.5 a half-counted
    tie); `sizes` gives each stratum's N_c.

    The bootstrap resamples each stratum's items with replacement (`_resample_size` of them); since
    an item enters only through its (valid, credits) pattern, each stratum is resampled as
    multinomial counts over its distinct patterns, which is the same resample and fast on any
    number of items.
    """
    strata_arr = np.asarray(strata, dtype=str)
    valid = np.asarray(valid, dtype=bool)
    credits = np.asarray(credits, dtype=float).reshape(len(strata_arr), len(runs))
    rng = np.random.default_rng(seed)
    numerator = np.zeros((n_boot + 1, len(runs)))
    denominator = np.zeros(n_boot + 1)
    strata_present = np.unique(strata_arr)
    for stratum in strata_present:
        rows = strata_arr == stratum
        n = int(rows.sum())
        patterns, counts = np.unique(
            np.column_stack([valid[rows], credits[rows]]).astype(float), axis=0, return_counts=True
        )
        m = _resample_size(n, sizes[stratum])
        drawn = np.vstack([counts / n, rng.multinomial(m, counts / n, size=n_boot) / m])  # row 0: the sample
        numerator += sizes[stratum] * drawn @ (patterns[:, :1] * patterns[:, 1:])
        denominator += sizes[stratum] * drawn @ patterns[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = numerator / denominator[:, None]
    alpha = 1 - level
    drawn_valid = int(valid.sum())
    cap = float(effective_size(drawn_valid, max(round(float(denominator[0])), drawn_valid)))
    variance = np.nanvar(accuracy[1:], axis=0, ddof=1)
    low, high = korn_graubard(accuracy[0], variance, drawn_valid, len(strata_present), level, cap=cap)
    difference: dict[tuple[str, str], tuple[float, float, float]] = {}
    flips: dict[tuple[str, str], float] = {}
    for a in range(len(runs)):
        for b in range(a + 1, len(runs)):
            gap = accuracy[:, a] - accuracy[:, b]
            d_low, d_high = np.nanquantile(gap[1:], [alpha / 2, 1 - alpha / 2])
            difference[(runs[a], runs[b])] = (float(gap[0]), float(d_low), float(d_high))
            if published is not None:
                # a resample that ties the two runs orders them neither way: not counted as a flip
                order = np.sign(published[a] - published[b])
                flips[(runs[a], runs[b])] = float(np.mean(np.sign(gap[1:]) == -order)) if order else 0.0
    return Leaderboard(list(runs), accuracy[0], low, high, difference, flips)


def korn_graubard(
    estimate: Any,
    variance: Any,
    n: int,
    n_strata: int,
    level: float = LEVEL,
    *,
    cap: float = np.inf,
    centre: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Korn and Graubard's (1998) interval for a proportion estimated from a complex sample, as
    R's `survey::svyciprop(method="beta")` computes it: the Clopper-Pearson interval of
    estimate * n_eff in n_eff, n_eff = p (1 - p) / variance scaled by (t_{n-1} / t_{n-K})^2 for the
    K strata's degrees of freedom. `estimate` and `variance` may be arrays (one per run); `centre`,
    where given, is the share whose p (1 - p) matches the variance (a smoothed one), else
    `estimate`; `cap`, where given, bounds n_eff (a zero variance takes it); an infinite n_eff (a
    census) gives the estimate itself.

    >>> low, high = korn_graubard(0.3, 0.021, 10, 1)
    >>> round(float(low), 4), round(float(high), 4)
    (0.0667, 0.6525)
    """
    from scipy import stats

    estimate, variance = np.asarray(estimate, dtype=float), np.asarray(variance, dtype=float)
    centre = estimate if centre is None else np.asarray(centre, dtype=float)
    alpha = 1 - level
    factor = (stats.t.ppf(1 - alpha / 2, max(n - 1, 1)) / stats.t.ppf(1 - alpha / 2, max(n - n_strata, 1))) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.where(variance > 0, centre * (1 - centre) / variance * factor, cap)
    # an infinite n_eff (a census with no cap) stays infinite: nan_to_num would make it the largest float
    n_eff = np.clip(np.nan_to_num(n_eff, nan=cap, posinf=np.inf), 1, cap)
    census = np.isinf(n_eff)
    sized = np.where(census, 1.0, n_eff)  # the census entries take the estimate itself below
    low, high = exact_interval(estimate * sized, sized, level)
    return np.where(census, estimate, low), np.where(census, estimate, high)


def _resample_size(n: int, size: int) -> int:
    """McCarthy and Snowden's (1985) bootstrap sample size for a stratum of `size` with `n` drawn:
    (n - 1) / (1 - n / size) resampled with replacement gives the stratified estimator's variance
    unbiased, finite-population correction included (n of n would understate it by (n - 1) / n)."""
    if n >= size:
        return 1_000_000  # a census: resampling varies (almost) nothing
    return max(1, round((n - 1) / (1 - n / size)))


def horvitz_thompson_total(values: np.ndarray, inclusion: np.ndarray) -> float:
    """The Horvitz-Thompson estimate of a population total from drawn items' values and their
    inclusion probabilities (each above zero).

    >>> horvitz_thompson_total(np.array([1.0, 0.0, 1.0]), np.array([0.5, 0.5, 0.25]))
    6.0
    """
    inclusion = np.asarray(inclusion, dtype=float)
    if (inclusion <= 0).any() or (inclusion > 1).any():
        raise ValueError("every inclusion probability must be above 0 and at most 1")
    return float(np.sum(np.asarray(values, dtype=float) / inclusion))


def poisson_sample(
    priority: np.ndarray, budget: float, floor: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Importance sampling: each item drawn independently with probability proportional to its
    `priority` (about `budget` items in all; the floor adds a few), never below `floor` (> 0, so
    every estimate stays unbiased). Returns the drawn positions and every item's inclusion probability."""
    if floor <= 0:
        raise ValueError("the floor of the inclusion probabilities must be above 0")
    priority = np.asarray(priority, dtype=float)
    inclusion = np.clip(budget * priority / max(priority.sum(), 1e-12), floor, 1.0)
    drawn = np.flatnonzero(rng.random(len(priority)) < inclusion)
    return drawn, inclusion

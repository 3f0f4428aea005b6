"""Benchmark health by simulation: the intervals of `analysis.health` cover the truth of synthetic
finite populations whose invalid share is known.

The invalid share of one stratum (a) has its coverage computed exactly: the share of the
hypergeometric distribution of the invalid items drawn whose interval holds the truth, for n / N
from 0.05 to a census; it must be at least 0.95 everywhere. The overall share of four strata (b)
and a run's accuracy on the valid items (c) are simulated: each condition draws its samples the
way the design does (without replacement, per stratum), many times from one seeded generator of
its own, and counts how often the 95% interval holds the population's true value; at least 0.93
(95% less Monte-Carlo noise). Coverage must be at most 0.99 where the sample is not tiny
(`Condition.bounded`), so the intervals are not uselessly wide. (d) holds Horvitz-Thompson to unbiasedness under Poisson
sampling with importance priorities. `bench/health_coverage.py` prints the whole table from the
same code (TESTING.md, "Benchmark health: coverage by simulation").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest
from scipy import stats

from foil_studio.analysis.health import (
    horvitz_thompson_total,
    hypergeometric_interval,
    poisson_sample,
    stratified_share,
    stratum_share,
    valid_accuracy,
)

LOWEST, HIGHEST = 0.93, 0.99  # coverage bounds; the highest only where `Condition.bounded`
EXACT_LOWEST = 0.95  # where coverage is computed exactly, no Monte-Carlo noise to allow for
REPS = {"single stratum": 0, "overall share": 1000, "valid accuracy": 500}  # 0: computed exactly
NEGLIGIBLE = 1e-13  # counts less likely than this are left out of an exact coverage (at most 1e-9 in all)
N_BOOT = 200  # the accuracy's bootstrap resamples per interval (the pages use 1000)
RIGHT = {True: 0.7, False: 0.4}  # a run is right on a valid item with 0.7, on an invalid one with 0.4
# Conditions measured above `HIGHEST` (seeded, so the same figure every run), left failing on
# purpose and reported (TESTING.md) rather than hidden by a looser bound; strict, so a change that
# brings one under the bound shows.
ABOVE_BOUND = {
    "single stratum: N=500 share=0.05 n=50 (n/N=0.1)": "0.992: the exact interval's discreteness at 2.5 expected "
    "invalid items among those drawn, the price of an exact interval",
    "single stratum: N=500 share=0.05 n=450 (n/N=0.9)": "0.992, the same figure: 2.5 expected invalid items among "
    "the 50 left undrawn (the hypergeometric distribution is symmetric in drawn and undrawn)",
    "overall share: mixed [.4 .05 .2 .01] n_c=50": "0.997: a stratum that showed no invalid item enters the "
    "variance as (x + 1) / (n + 2), which overstates a 1% stratum's variance 2x at n_c = 50, and here that "
    "stratum weighs 66%",
}

SINGLE_SIZES = (50, 141, 500, 5000)  # 141: VALSE's coreference-hard, drawn to 120 by a few `health next`
FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 0.85, 0.9, 0.95, 1.0)  # n / N of one stratum
SHARES = (0.01, 0.05, 0.2, 0.4)
SAMPLES = (10, 50, 200)
STRATA = (50, 500, 2000, 5000)
PATTERNS = {
    "all 1%": (0.01, 0.01, 0.01, 0.01),
    "all 20%": (0.2, 0.2, 0.2, 0.2),
    "mixed [.4 .05 .2 .01]": (0.4, 0.05, 0.2, 0.01),
    "mixed [.05 .4 .01 .2]": (0.05, 0.4, 0.01, 0.2),
}


@dataclass(frozen=True)
class Condition:
    """One simulated setting: `part` is "single stratum", "overall share" or "valid accuracy";
    `sizes` the strata's N_c, `shares` their nominal invalid shares, `n` the items drawn per
    stratum (at most N_c)."""

    part: str
    sizes: tuple[int, ...]
    shares: tuple[float, ...]
    n: int
    pattern: str = ""

    @property
    def drawn(self) -> tuple[int, ...]:
        return tuple(min(self.n, size) for size in self.sizes)

    @property
    def invalid(self) -> tuple[int, ...]:
        """K_c: each stratum's invalid items, at least one."""
        return tuple(max(1, round(share * size)) for share, size in zip(self.shares, self.sizes))

    @property
    def true_share(self) -> float:
        """The population's invalid share: sum K_c / sum N_c."""
        return sum(self.invalid) / sum(self.sizes)

    @property
    def census(self) -> bool:
        return self.drawn == self.sizes

    @property
    def exact(self) -> bool:
        """Whether coverage is computed exactly (one stratum's share) rather than simulated."""
        return REPS[self.part] == 0

    @property
    def lowest(self) -> float:
        return EXACT_LOWEST if self.exact else LOWEST

    @property
    def bounded(self) -> bool:
        """Whether coverage must also stay at most `HIGHEST`: not a census (exact, coverage 1), at
        least 50 items drawn per stratum, for one stratum also 50 left undrawn (near a census only
        a handful of invalid counts remain possible, and an exact interval cannot come close to
        95%) and, for an invalid share, a true share of at least 5% (a run's accuracy, near 0.7, is
        far from the edges whatever the invalid shares)."""
        if self.census or self.n < 50 or (self.exact and self.sizes[0] - self.n < 50):
            return False
        return self.part == "valid accuracy" or self.true_share >= 0.05 - 1e-12

    @property
    def label(self) -> str:
        if self.part == "single stratum":
            return f"N={self.sizes[0]} share={self.shares[0]:g} n={self.n} (n/N={self.n / self.sizes[0]:.2g})"
        return f"{self.pattern} n_c={self.n}"

    @property
    def name(self) -> str:
        return f"{self.part}: {self.label}"

    @property
    def seed(self) -> list[int]:
        """The condition's own random stream, the same whichever conditions run."""
        return [list(REPS).index(self.part), *self.sizes, *(round(s * 1000) for s in self.shares), self.n]


@dataclass(frozen=True)
class Coverage:
    """What the simulation of one condition measured."""

    condition: Condition
    truth: float
    coverage: float
    width: float  # mean interval width
    reps: int  # 0: computed exactly


def conditions() -> list[Condition]:
    """Every condition, (a), (b) then (c)."""
    single = [
        Condition("single stratum", (size,), (share,), max(1, round(fraction * size)))
        for size in SINGLE_SIZES
        for share in SHARES
        for fraction in FRACTIONS
    ]
    strata = [
        Condition(part, STRATA, shares, n, pattern)
        for part in ("overall share", "valid accuracy")
        for pattern, shares in PATTERNS.items()
        for n in SAMPLES
    ]
    return single + strata


def _covers(truth: float, low: float, high: float) -> bool:
    return bool(low - 1e-12 <= truth <= high + 1e-12)


@cache
def coverage(condition: Condition, reps: int | None = None) -> Coverage:
    """Simulate one condition (each once per process) with `reps` repetitions (`REPS` of its part
    unless given), or compute its coverage exactly (one stratum's share)."""
    if condition.exact:
        return _exact_stratum_coverage(condition)
    rng = np.random.default_rng(condition.seed)
    reps = reps or REPS[condition.part]
    sizes, invalid, drawn = (np.array(v) for v in (condition.sizes, condition.invalid, condition.drawn))
    if condition.part == "valid accuracy":
        return _accuracy_coverage(condition, rng, reps)
    # the invalid count drawn in each stratum, every repetition at once; identical samples share an interval
    counts = rng.hypergeometric(invalid, sizes - invalid, drawn, size=(reps, len(sizes)))
    samples, times = np.unique(counts, axis=0, return_counts=True)
    truth = condition.true_share
    covered = width = 0.0
    for sample, k in zip(samples, times):
        share = stratified_share(sample.tolist(), condition.drawn, condition.sizes)
        covered += k * _covers(truth, share.low, share.high)
        width += k * (share.high - share.low)
    return Coverage(condition, truth, covered / reps, width / reps, reps)


def _exact_stratum_coverage(condition: Condition) -> Coverage:
    """One stratum's coverage and mean width, summed over the hypergeometric distribution of the
    invalid items drawn (every count but the negligible ones)."""
    (size,), (bad,), (n,) = condition.sizes, condition.invalid, condition.drawn
    counts = np.arange(max(0, n - (size - bad)), min(n, bad) + 1)
    weights = stats.hypergeom.pmf(counts, size, bad, n)
    counts, weights = counts[weights > NEGLIGIBLE], weights[weights > NEGLIGIBLE]
    low, high = hypergeometric_interval(counts, n, size)
    truth = condition.true_share
    covered = (low - 1e-12 <= truth) & (truth <= high + 1e-12)
    return Coverage(condition, truth, float(weights @ covered), float(weights @ (high - low)), 0)


def _accuracy_coverage(condition: Condition, rng: np.random.Generator, reps: int) -> Coverage:
    """A run's accuracy on valid items: the population's items have a fixed correctness (drawn once
    from the population's own stream), samples are drawn as counts of the four (valid, right)
    patterns per stratum (multivariate hypergeometric: the same as drawing items), and
    `valid_accuracy` estimates from the items those counts make."""
    population = np.random.default_rng([9, *condition.seed[1:-1]])  # the same population for every n
    patterns = np.array([(1, 1), (1, 0), (0, 1), (0, 0)], dtype=float)  # (valid, right)
    per_stratum = []
    for size, bad in zip(condition.sizes, condition.invalid):
        right_valid = int((population.random(size - bad) < RIGHT[True]).sum())
        right_invalid = int((population.random(bad) < RIGHT[False]).sum())
        per_stratum.append([right_valid, size - bad - right_valid, right_invalid, bad - right_invalid])
    truth = sum(p[0] for p in per_stratum) / sum(p[0] + p[1] for p in per_stratum)
    names = [f"s{i}" for i in range(len(per_stratum))]
    sizes = dict(zip(names, condition.sizes))
    draws = [rng.multivariate_hypergeometric(colors, n, size=reps) for colors, n in zip(per_stratum, condition.drawn)]
    covered = width = 0.0
    for rep in range(reps):
        counts = np.concatenate([draw[rep] for draw in draws])
        items = np.repeat(np.tile(patterns, (len(names), 1)), counts, axis=0)
        strata = np.repeat(np.repeat(names, len(patterns)), counts)
        board = valid_accuracy(strata, items[:, 0], items[:, 1:], sizes, ["run"], n_boot=N_BOOT, seed=rep)
        low, high = float(board.low[0]), float(board.high[0])
        covered += _covers(truth, low, high)  # no valid item drawn: nan, a miss
        width += high - low if np.isfinite(high - low) else 1.0
    return Coverage(condition, truth, covered / reps, width / reps, reps)


def horvitz_thompson_check(reps: int = 2000, size: int = 5000, budget: float = 300, floor: float = 0.01) -> dict:
    """Horvitz-Thompson totals of invalid items under Poisson sampling with importance priorities:
    a population whose items carry a suspicion score s (Beta(1, 4)), invalid with probability s,
    drawn with priority s (floor `floor`). Returns the true total, the mean of the estimates and
    its Monte-Carlo standard error, and the unweighted estimate (drawn share times size), which
    the unequal probabilities make biased."""
    rng = np.random.default_rng(4)
    score = rng.beta(1, 4, size)
    invalid = (rng.random(size) < score).astype(float)
    estimates, naive, drawn_sizes = np.empty(reps), np.empty(reps), np.empty(reps)
    for rep in range(reps):
        drawn, inclusion = poisson_sample(score, budget, floor, rng)
        estimates[rep] = horvitz_thompson_total(invalid[drawn], inclusion[drawn])
        naive[rep] = invalid[drawn].mean() * size
        drawn_sizes[rep] = len(drawn)
    return {
        "truth": float(invalid.sum()),
        "mean": float(estimates.mean()),
        "se": float(estimates.std(ddof=1) / np.sqrt(reps)),
        "naive": float(naive.mean()),
        "drawn": float(drawn_sizes.mean()),
        "reps": reps,
    }


def markdown_table(results: list[Coverage]) -> str:
    """The coverage tables in Markdown: one stratum's exact coverage and mean width as grids (a row
    per stratum size and true share, a column per n / N), then a row per simulated condition."""
    single = [r for r in results if r.condition.exact]
    lines = _stratum_grid(single, "coverage") + [""] + _stratum_grid(single, "width") if single else []
    lines += [
        "",
        "| part | condition | true value | coverage | mean width | reps | bound |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        c = r.condition
        if c.exact:
            continue
        bound = f"{c.lowest}–{HIGHEST}" if c.bounded else f">= {c.lowest}"
        bound += " (exceeded, below)" if c.name in ABOVE_BOUND else ""
        lines.append(
            f"| {c.part} | {c.label} | {r.truth:.4f} | {r.coverage:.3f} | {r.width:.3f} | {r.reps} | {bound} |"
        )
    lines += ["", "Above the bound, known (at the test's repetitions):"] + [
        f"- {name}: {why}" for name, why in ABOVE_BOUND.items()
    ]
    return "\n".join(lines)


def _stratum_grid(results: list[Coverage], figure: str) -> list[str]:
    """One stratum's exact `coverage` or mean `width` by stratum size and true share (rows) and
    n / N (columns); a coverage above the bound where it applies is marked with *."""
    columns = [f"{f:g}" for f in FRACTIONS]
    head = f"| N | invalid K (K / N) | {figure} at n/N = " + " | ".join(columns) + " |"
    lines = [head, "| ---: " * (len(columns) + 2) + "|"]
    rows: dict[tuple[int, int], list[str]] = {}
    for r in results:
        c = r.condition
        mark = "*" if figure == "coverage" and c.bounded and r.coverage > HIGHEST else ""
        rows.setdefault((c.sizes[0], c.invalid[0]), []).append(f"{getattr(r, figure):.3f}{mark}")
    return lines + [f"| {n} | {k} ({k / n:.3f}) | " + " | ".join(cells) + " |" for (n, k), cells in rows.items()]


def _where(result: Coverage) -> str:
    how = f"{result.reps} repetitions" if result.reps else "exact"
    return f"{result.condition.name} (truth {result.truth:.4f}, {how})"


@pytest.mark.parametrize("condition", conditions(), ids=lambda c: c.name)
def test_intervals_cover_the_truth_at_least_95_percent_exactly_or_93_simulated(condition: Condition):
    result = coverage(condition)
    lowest = condition.lowest
    assert result.coverage >= lowest - 1e-9, f"{_where(result)}: coverage {result.coverage:.4f} below {lowest}"


@pytest.mark.parametrize(
    "condition",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=ABOVE_BOUND[c.name]))
        if c.name in ABOVE_BOUND
        else c
        for c in conditions()
        if c.bounded
    ],
    ids=lambda c: c.name,
)
def test_intervals_are_not_uselessly_wide_where_the_sample_is_not_tiny(condition: Condition):
    result = coverage(condition)
    assert result.coverage <= HIGHEST, (
        f"{_where(result)}: coverage {result.coverage:.3f} above {HIGHEST}, the interval wider than it needs"
    )


def test_horvitz_thompson_is_unbiased_under_importance_sampling():
    found = horvitz_thompson_check()
    gap = abs(found["mean"] - found["truth"])
    where = f"Horvitz-Thompson over {found['reps']} Poisson samples (about {found['drawn']:.0f} items each)"
    assert gap <= 3 * found["se"], (
        f"{where}: mean {found['mean']:.1f} against a true total {found['truth']:.0f}, "
        f"{gap / found['se']:.1f} standard errors off"
    )
    # the check has power: ignoring the inclusion probabilities is far off on the same samples
    assert abs(found["naive"] - found["truth"]) > 10 * found["se"], f"{where}: the unweighted estimate is unbiased too"


def test_few_invalid_items_found_give_an_overall_interval_near_zero():
    """No invalid item among 800 drawn, 200 from each of the four strata: one stratum of 5,000 alone
    bounds its share below 0.018 (`stratum_share(0, 200, 5000)`); the whole cannot be less known."""
    none_found = stratified_share([0, 0, 0, 0], [min(200, size) for size in STRATA], STRATA)
    one_in_the_smallest = stratified_share([1, 0, 0, 0], [50] * 4, STRATA)
    assert none_found.high < 0.05 and one_in_the_smallest.high < 0.1, (none_found, one_in_the_smallest)


def test_the_exact_coverage_is_that_of_stratum_shares_own_interval():
    """`_exact_stratum_coverage` reads the intervals off `hypergeometric_interval` for all counts at
    once; `stratum_share` returns the same, count by count."""
    for size, n in ((50, 40), (141, 120), (500, 25)):
        low, high = hypergeometric_interval(np.arange(n + 1), n, size)
        shares = [stratum_share(x, n, size) for x in range(n + 1)]
        assert [(s.low, s.high) for s in shares] == list(zip(low.tolist(), high.tolist()))

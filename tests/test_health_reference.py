"""Benchmark health's statistics (`analysis.health`) pinned to reference values from independent
implementations, away from the edges, and the properties a survey statistician checks (issue 40).

Where each literal comes from:
- HYPERGEOMETRIC: brute force in exact rational arithmetic (Python's `math.comb` and `fractions`,
  no scipy): for every K of 0..N the tails P(X >= x | K) and P(X <= x | K) of drawing x of n
  from N items of which K invalid; K kept where both are above 1/40. Low and high are the first
  and last K kept, over N.
- CLOPPER_PEARSON: statsmodels 0.15 `proportion_confint(count, n, method="beta")`.
- KORN_GRAUBARD: samplics 0.6 `TaylorEstimator(PopParam.mean)` (one row per drawn item, 1 if
  invalid, weight N_h / n_h, `stratum`, `fpc={h: 1 - n_h / N_h}`) for the estimate and its
  variance, then R's `survey::svyciprop(method="beta")` line by line in scipy: n_eff = p (1 - p) /
  v * (qt(0.025, n - 1) / qt(0.025, n - H))^2, `beta.ppf(0.025, n_eff p, n_eff (1 - p) + 1)` and
  `beta.ppf(0.975, n_eff p + 1, n_eff (1 - p))`.
- EDGE: the variance and centre in `fractions` with the first stratum's share (0 + 1) / (10 + 2),
  the others raw, then the same svyciprop steps with the centre in n_eff's numerator.
- RATIO: samplics `TaylorEstimator(PopParam.ratio)` (y = valid and right, x = valid, the same
  weights, strata and fpc) for the estimate and its linearised variance, then the svyciprop steps
  with n = the valid items drawn, H = 3 and n_eff at most n (N_valid - 1) / (N_valid - n).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from foil_studio.analysis import health as h

# (invalid drawn x, drawn n, stratum size N) -> (lowest K, highest K) kept; see the module docstring.
HYPERGEOMETRIC = {
    (3, 10, 100): (8, 63),
    (0, 40, 50): (0, 2),  # the case: Clopper-Pearson on n(N-1)/(N-n) said [0, 0.0186]
    (12, 120, 141): (12, 18),  # VALSE's coreference-hard after a few `health next` rounds
    (7, 30, 200): (22, 81),
    (20, 45, 60): (22, 31),
    (3, 10, 20): (3, 11),
    (3, 10, 10): (3, 3),  # a census
}
CLOPPER_PEARSON = {
    (3, 10): (0.06673951117773447, 0.6524528500599973),
    (7, 23): (0.13210287969809986, 0.5291916660085068),
}
# (invalid, decided, sizes) -> (estimate, variance, low, high); none at an edge, so no smoothing.
KORN_GRAUBARD = {
    ((3, 5, 2), (10, 20, 15), (100, 400, 60)): (0.2464285714, 0.005523870262, 0.114670177, 0.4253118691),
    ((7, 12), (40, 60), (141, 1000)): (0.1969106047, 0.001998547969, 0.1159824697, 0.3015871612),
    ((1, 4, 9, 2), (12, 30, 45, 8), (50, 500, 2000, 20)): (0.1851491569, 0.002297416055, 0.09995351431, 0.3002558482),
}
EDGE = {  # the first stratum showed no invalid item: smoothed there only
    ((0, 5, 2), (10, 20, 15), (100, 400, 60)): (
        0.19285714285714287,
        0.005097814423388403,
        0.07581669862304106,
        0.369871881241772,
    ),
}
# Per stratum: valid drawn, of them right, invalid drawn, of them right; and the stratum sizes.
RATIO_SAMPLE = {"A": (25, 18, 5, 2), "B": (36, 30, 4, 0), "C": (20, 11, 5, 3)}
RATIO_SIZES = {"A": 200, "B": 500, "C": 80}
RATIO = (0.7789422135, 0.673619, 0.863219)  # estimate, low, high (Taylor variance 0.002102532895)


@pytest.mark.parametrize(("case", "bounds"), HYPERGEOMETRIC.items(), ids=str)
def test_a_stratum_share_is_the_exact_hypergeometric_interval(case, bounds):
    invalid, decided, size = case
    share = h.stratum_share(invalid, decided, size)
    assert (share.low, share.high) == (bounds[0] / size, bounds[1] / size), share
    assert share.estimate == invalid / decided


def test_one_invalid_item_left_undrawn_is_covered_as_often_as_promised():
    """The issue's case: N = 50 with one invalid item, 40 drawn. The interval must hold 0.02 with
    probability at least 0.95 over the hypergeometric distribution of what is drawn (it was 0.80)."""
    for invalid in (1, 2, 3):
        counts = np.arange(0, invalid + 1)
        weights = stats.hypergeom.pmf(counts, 50, invalid, 40)
        held = [
            h.stratum_share(int(x), 40, 50).low <= invalid / 50 <= h.stratum_share(int(x), 40, 50).high for x in counts
        ]
        assert weights @ np.array(held) >= 0.95, (invalid, dict(zip(counts.tolist(), held)))


@pytest.mark.parametrize(("case", "bounds"), CLOPPER_PEARSON.items(), ids=str)
def test_from_a_huge_population_the_stratum_share_is_clopper_pearson(case, bounds):
    invalid, decided = case
    share = h.stratum_share(invalid, decided, 10**7)
    assert share.low == pytest.approx(bounds[0], abs=2e-5) and share.high == pytest.approx(bounds[1], abs=2e-5)
    low, high = h.exact_interval(invalid, decided)
    assert (float(low), float(high)) == pytest.approx(bounds, abs=1e-12)


def test_korn_graubard_of_a_simple_random_sample_is_clopper_pearson():
    """One stratum, variance p (1 - p) / n: the effective size is n and the t ratio 1."""
    low, high = h.korn_graubard(0.3, 0.3 * 0.7 / 10, 10, 1)
    assert (float(low), float(high)) == pytest.approx(CLOPPER_PEARSON[(3, 10)], abs=1e-12)


@pytest.mark.parametrize(("case", "expected"), KORN_GRAUBARD.items(), ids=str)
def test_the_overall_share_is_korn_graubard_as_r_computes_it(case, expected):
    invalid, decided, sizes = case
    estimate, variance, low, high = expected
    share = h.stratified_share(invalid, decided, sizes)
    assert (share.estimate, share.low, share.high) == pytest.approx((estimate, low, high), rel=1e-8)
    found, _ = h.stratified_variance(*(np.array(v, dtype=float) for v in case))
    assert found == pytest.approx(variance, rel=1e-9)


@pytest.mark.parametrize(("case", "expected"), EDGE.items(), ids=str)
def test_a_stratum_at_an_edge_is_smoothed_and_no_other(case, expected):
    estimate, variance, low, high = expected
    share = h.stratified_share(*case)
    assert (share.estimate, share.low, share.high) == pytest.approx((estimate, low, high), rel=1e-12)
    found, _ = h.stratified_variance(*(np.array(v, dtype=float) for v in case))
    assert found == pytest.approx(variance, rel=1e-12)


def ratio_items(sample: dict[str, tuple[int, int, int, int]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Strata, valid flags and one run's credits of the items `sample` describes."""
    strata, valid, right = [], [], []
    for stratum, (n_valid, right_valid, n_invalid, right_invalid) in sample.items():
        strata += [stratum] * (n_valid + n_invalid)
        valid += [True] * n_valid + [False] * n_invalid
        right += (
            [1] * right_valid + [0] * (n_valid - right_valid) + [1] * right_invalid + [0] * (n_invalid - right_invalid)
        )
    return strata, np.array(valid), np.array(right, dtype=float)[:, None]


def test_valid_accuracy_is_the_ratio_estimator_with_its_linearised_variance():
    """The bootstrap's variance (McCarthy-Snowden resample sizes) estimates the linearised
    variance samplics computes; with 20,000 resamples the interval is the reference's within 0.003."""
    board = h.valid_accuracy(*ratio_items(RATIO_SAMPLE), RATIO_SIZES, ["run"], n_boot=20_000, seed=0)
    estimate, low, high = RATIO
    assert float(board.estimate[0]) == pytest.approx(estimate, rel=1e-9)
    assert float(board.low[0]) == pytest.approx(low, abs=0.003) and float(board.high[0]) == pytest.approx(
        high, abs=0.003
    )


def test_counts_and_allocations_worked_by_hand():
    # 1 / 0.5 + 0 + 1 / 0.25 + 1 / 1
    assert h.horvitz_thompson_total(np.array([1.0, 0.0, 1.0, 1.0]), np.array([0.5, 0.2, 0.25, 1.0])) == 7.0
    # Neyman weights N_c S_c = 50, 90, 60: quotas 12.5, 22.5, 15, the tied remainder to the first
    spreads = {"a": 0.5, "b": 0.3, "c": 0.1}
    assert h.allocate({"a": 100, "b": 300, "c": 600}, 50, "neyman", spreads=spreads) == {"a": 13, "b": 22, "c": 15}
    assert h.smoothed_share(3, 10) == 3.5 / 11
    assert float(h.effective_size(10, 100)) == 10 * 99 / 90


# --- properties ------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_a_census_has_zero_width(counts):
    invalid, n = counts
    share = h.stratum_share(invalid, n, n)
    assert share.low == share.high == invalid / n
    overall = h.stratified_share([invalid, 0], [n, 5], [n, 5])
    assert overall.low == overall.high == overall.estimate


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 60).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_same_counts_from_a_small_population_give_a_narrower_interval(counts):
    invalid, n = counts
    small, huge = h.stratum_share(invalid, n, 2 * n), h.stratum_share(invalid, n, 10**6)
    assert small.high - small.low < huge.high - huge.low, (small, huge)
    few, many = (
        h.stratified_share([invalid, 1], [n, 2], [2 * n, 4]),
        h.stratified_share([invalid, 1], [n, 2], [10**6, 10**6]),
    )
    assert few.high - few.low < many.high - many.low, (few, many)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abcdef"), st.integers(1, 5000), min_size=1),
    st.integers(0, 400),
    st.floats(0.01, 1.0),
)
@example({"a": 95, "b": 323}, 187, 0.40365613139152245)  # a tie of remainders once broken by the last bit
def test_neyman_allocation_with_equal_spreads_is_proportional(sizes, budget, spread):
    neyman = h.allocate(sizes, budget, "neyman", spreads=dict.fromkeys(sizes, spread))
    assert neyman == h.allocate(sizes, budget, "proportional")


@pytest.mark.parametrize(
    "sample", [RATIO_SAMPLE, {"A": (25, 25, 5, 2), "B": (36, 36, 4, 0)}], ids=["mixed", "all right"]
)
def test_the_ratio_estimator_over_a_census_is_the_exact_accuracy_with_almost_no_width(sample):
    strata, valid, credits = ratio_items(sample)
    sizes = {s: valid_n + invalid_n for s, (valid_n, _, invalid_n, _) in sample.items()}
    board = h.valid_accuracy(strata, valid, credits, sizes, ["run"], n_boot=500, seed=1)
    exact = sum(r for _, r, _, _ in sample.values()) / sum(v for v, _, _, _ in sample.values())
    assert float(board.estimate[0]) == pytest.approx(exact, rel=1e-12)
    assert float(board.high[0]) - float(board.low[0]) < 0.01, (board.low, board.high)
    assert float(board.low[0]) <= exact <= float(board.high[0])

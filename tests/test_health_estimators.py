"""`analysis.health` pinned where its reference tests leave room (issue 40's mutation run): the JSON
form of a share, the refusals, each estimator's arguments one by one, the allocation's rounding and
the leaderboard's comparisons. Reference values come from scipy and statsmodels (named where used)
or from exact arithmetic; none repeats the implementation."""

from __future__ import annotations

import warnings
from dataclasses import astuple
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from foil_studio.analysis import health as h
from tests.test_health_reference import ratio_items


def test_a_share_as_json_rounds_to_four_decimals_and_keeps_its_counts():
    share = h.Share(0.123456, 0.0123449, 0.98765, 3, 10, 200)
    assert share.as_dict() == {
        "estimate": 0.1235,
        "interval": [0.0123, 0.9877],
        "count": 3,
        "decided": 10,
        "size": 200,
    }


# --- helpers: independent references --------------------------------------------------------------


def brute_force_bounds(count: int, n: int, size: int, level: float) -> tuple[Fraction, Fraction]:
    """The exact interval for sampling without replacement in rational arithmetic (no scipy): every
    K of 0..size under which drawing `count` of `n` is in neither tail of at most (1 - level) / 2."""
    tail = (1 - Fraction(level).limit_denominator(1000)) / 2
    total = comb(size, n)

    def p(x: int, k: int) -> Fraction:
        return Fraction(comb(k, x) * comb(size - k, n - x), total)

    kept = [
        k
        for k in range(size + 1)
        if sum(p(x, k) for x in range(count, n + 1)) > tail and sum(p(x, k) for x in range(count + 1)) > tail
    ]
    return Fraction(kept[0], size), Fraction(kept[-1], size)


def clopper_pearson(count: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """statsmodels' Clopper-Pearson interval (it takes fractional counts as well)."""
    return tuple(float(v) for v in proportion_confint(count, n, alpha=1 - level, method="beta"))


def svyciprop(estimate: float, variance: float, n: int, strata: int, level: float = 0.95, cap: float = np.inf):
    """R's `survey::svyciprop(method="beta")` step by step (scipy's t quantiles, statsmodels'
    Clopper-Pearson), with the effective size at least 1 and at most `cap`."""
    t = stats.t.ppf(1 - (1 - level) / 2, [max(n - 1, 1), max(n - strata, 1)])
    n_eff = min(max(estimate * (1 - estimate) / variance * (t[0] / t[1]) ** 2, 1.0), cap)
    return clopper_pearson(estimate * n_eff, n_eff, level)


# --- one stratum -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "n", "size", "level"),
    [(3, 10, 20, 0.9), (10, 10, 20, 0.95), (0, 10, 20, 0.95), (1, 1, 5, 0.95), (5, 12, 30, 0.8)],
    ids=str,
)
def test_the_hypergeometric_interval_at_any_level_and_count_is_the_brute_force_one(count, n, size, level):
    low, high = brute_force_bounds(count, n, size, level)
    assert [float(v) for v in h.hypergeometric_interval(count, n, size, level)] == [float(low), float(high)]
    share = h.stratum_share(count, n, size, level)
    assert (share.low, share.high) == (float(low), float(high))
    assert (share.estimate, share.count, share.decided, share.size) == (count / n, count, n, size)


def test_the_hypergeometric_interval_takes_an_array_of_counts():
    low, high = h.hypergeometric_interval(np.array([0, 3, 10]), 10, 20)
    expected = [brute_force_bounds(x, 10, 20, 0.95) for x in (0, 3, 10)]
    assert low.tolist() == [float(lo) for lo, _ in expected] and high.tolist() == [float(hi) for _, hi in expected]


def test_clopper_pearson_at_another_level_and_on_arrays_is_statsmodels():
    low, high = h.exact_interval(3, 10, 0.9)
    assert (float(low), float(high)) == pytest.approx(clopper_pearson(3, 10, 0.9), abs=1e-12)
    low, high = h.exact_interval(np.array([0.0, 2.5, 7.3]), np.array([10.0, 7.3, 7.3]))
    expected = [clopper_pearson(x, n) for x, n in ((0, 10), (2.5, 7.3), (7.3, 7.3))]
    assert low.tolist() == pytest.approx([e[0] for e in expected], abs=1e-12)
    assert high.tolist() == pytest.approx([e[1] for e in expected], abs=1e-12)
    assert (low[0], high[2]) == (0.0, 1.0)


def test_the_effective_size_of_a_census_is_infinite():
    assert float(h.effective_size(10, 10)) == np.inf
    assert h.effective_size(np.array([5, 20, 20]), np.array([20, 20, 41])).tolist() == [
        5 * 19 / 15,
        np.inf,
        20 * 40 / 21,
    ]


@pytest.mark.parametrize(
    ("invalid", "decided", "size", "message"),
    [
        (0, 0, 5, "a stratum needs at least one decided item for an estimate"),
        (4, 3, 5, "4 of 3 decided items in a stratum of 5"),
        (1, 6, 5, "1 of 6 decided items in a stratum of 5"),
        (-1, 3, 5, "-1 of 3 decided items in a stratum of 5"),
    ],
)
def test_a_stratum_share_refuses_impossible_counts_in_words(invalid, decided, size, message):
    with pytest.raises(ValueError) as refused:
        h.stratum_share(invalid, decided, size)
    assert str(refused.value) == message


# --- strata combined ---------------------------------------------------------------------------------


def test_the_overall_share_counts_its_strata_and_a_census_of_them_is_exact():
    share = h.stratified_share([3, 5, 2], [10, 20, 15], [100, 400, 60])
    assert (share.count, share.decided, share.size) == (10, 45, 560)
    census = h.stratified_share([1, 2], [5, 5], [5, 5])
    assert (census.count, census.decided, census.size) == (3, 10, 10)
    assert census.estimate == census.low == census.high == 0.3  # to the last digit, as the items' own mean
    bins = h.stratified_share([2, 7, 8, 21], [317, 100, 45, 38], [317, 100, 45, 38])
    assert bins.estimate == bins.low == bins.high == 38 / 500


def test_the_overall_share_at_another_level_is_clopper_pearson_on_the_design_effective_size():
    """Two strata of 10**9 with 3 invalid of 11 each: the design variance is p (1 - p) (1 - f) / 20, so
    the effective size is 20 / (1 - f) times the t ratio (t_21 / t_20)^2."""
    share = h.stratified_share([3, 3], [11, 11], [10**9, 10**9], level=0.9)
    t_ratio = (stats.t.ppf(0.95, 21) / stats.t.ppf(0.95, 20)) ** 2
    n_eff = 20 / (1 - 11 / 10**9) * t_ratio
    assert (share.low, share.high) == pytest.approx(clopper_pearson(3 / 11 * n_eff, n_eff, 0.9), rel=1e-9)


def test_strata_taken_whole_add_their_count_and_one_stratum_left_open_its_exact_interval():
    """Found by the coverage grid at n/N 0.9: Neyman's plan counts the common bins whole and draws 266 of
    the rare bin's 316, none invalid. The 50 undrawn may hold one invalid item (a draw missing it has
    probability 50 / 316), so the truth 20 / 500 must be inside; Korn and Graubard's interval over all
    four bins stopped at 19.5 / 500."""
    share = h.stratified_share([0, 5, 4, 10], [266, 97, 55, 32], [316, 97, 55, 32])
    low, high = h.hypergeometric_interval(0, 266, 316)
    assert (share.low, share.high) == pytest.approx(((19 + 316 * low) / 500, (19 + 316 * high) / 500), abs=1e-15)
    assert share.high == pytest.approx(20 / 500)
    one = h.stratified_share([3], [11], [40])
    assert (one.estimate, one.low, one.high) == pytest.approx(astuple(h.stratum_share(3, 11, 40))[:3], abs=1e-15)
    at_90 = h.stratified_share([3, 2], [11, 5], [40, 5], level=0.9)
    low, high = h.hypergeometric_interval(3, 11, 40, level=0.9)
    assert (at_90.low, at_90.high) == pytest.approx(((2 + 40 * low) / 45, (2 + 40 * high) / 45), abs=1e-15)
    assert at_90.high < h.stratified_share([3, 2], [11, 5], [40, 5]).high


def test_a_rare_stratum_drawn_in_part_beside_common_ones_counted_whole_keeps_its_skewed_interval():
    """Two strata left open and two counted whole: Korn and Graubard's interval of the open ones alone
    (their own p (1 - p), their own degrees of freedom, an effective size of at most their 405 items),
    shifted by the 61 counted. Truth 84 / 500 in the draw the coverage grid missed it on."""
    share = h.stratified_share([0, 18, 26, 35], [124, 81, 52, 43], [318, 87, 52, 43], pseudo=[0.5, 0.2, 0.2, 0.1])
    variance, centre = h.stratified_variance(
        np.array([0.0, 18]), np.array([124.0, 81]), np.array([318.0, 87]), np.array([0.5, 0.2])
    )
    open_count = 87 * 18 / 81  # the second bin's share of its 87 items
    low, high = h.korn_graubard(open_count / 405, variance, 205, 2, centre=centre, cap=405)
    assert (share.low, share.high) == pytest.approx(((61 + 405 * low) / 500, (61 + 405 * high) / 500), rel=1e-12)
    assert share.estimate == pytest.approx((61 + open_count) / 500, rel=1e-15)
    assert share.low < 84 / 500 < share.high


@pytest.mark.parametrize(
    ("invalid", "decided", "sizes", "message"),
    [
        ([], [], [], "every stratum needs at least one decided item for an overall estimate"),
        ([0, 1], [0, 2], [5, 5], "every stratum needs at least one decided item for an overall estimate"),
        ([1, 0], [10, 10], [100, 5], "[1, 0] of [10, 10] decided items in strata of [100, 5]"),
        ([-1, 0], [10, 10], [100, 50], "[-1, 0] of [10, 10] decided items in strata of [100, 50]"),
        ([1, 11], [10, 10], [100, 50], "[1, 11] of [10, 10] decided items in strata of [100, 50]"),
    ],
)
def test_the_overall_share_refuses_impossible_counts_in_words(invalid, decided, sizes, message):
    with pytest.raises(ValueError) as refused:
        h.stratified_share(invalid, decided, sizes)
    assert str(refused.value) == message


def test_strata_of_one_and_two_decided_items_enter_the_variance_with_divisor_one():
    """Worked in fractions: W = (1/4, 3/4); the first stratum (1 of 2) raw, p (1 - p) / (2 - 1); the
    second (0 of 1) at an edge, q = 1/3, divided by max(1 - 1, 1)."""
    variance, centre = h.stratified_variance(np.array([1.0, 0.0]), np.array([2.0, 1.0]), np.array([10.0, 30.0]))
    w1, w2 = Fraction(1, 4), Fraction(3, 4)
    q2 = Fraction(1, 3)
    expected = w1**2 * (1 - Fraction(2, 10)) * Fraction(1, 4) + w2**2 * (1 - Fraction(1, 30)) * q2 * (1 - q2)
    assert expected == Fraction(2, 15)
    assert variance == pytest.approx(float(expected), rel=1e-14)
    assert centre == pytest.approx(float(w1 / 2 + w2 * q2), rel=1e-14)
    # a stratum that showed only invalid items is smoothed too: (2 + 1) / (2 + 2)
    _, centre = h.stratified_variance(np.array([2.0]), np.array([2.0]), np.array([10.0]))
    assert centre == 0.75


# --- Korn and Graubard -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("estimate", "variance", "n", "strata"),
    [(0.4, 0.01, 3, 3), (0.4, 0.01, 2, 2), (0.3, 0.004, 30, 4), (0.25, 0.02, 1, 1)],
    ids=str,
)
def test_korn_graubard_scales_the_effective_size_by_the_t_ratio_of_its_degrees_of_freedom(
    estimate, variance, n, strata
):
    low, high = h.korn_graubard(estimate, variance, n, strata)
    assert (float(low), float(high)) == pytest.approx(svyciprop(estimate, variance, n, strata), rel=1e-10)
    low, high = h.korn_graubard(estimate, variance, n, strata, 0.8)
    assert (float(low), float(high)) == pytest.approx(svyciprop(estimate, variance, n, strata, 0.8), rel=1e-10)


def test_korn_graubard_bounds_the_effective_size_by_one_and_the_cap_and_a_census_is_its_estimate():
    # p (1 - p) / v = 0.025 effective items: at least one
    low, high = h.korn_graubard(0.5, 10.0, 10, 1)
    assert (float(low), float(high)) == pytest.approx(clopper_pearson(0.5, 1), rel=1e-12)
    # p (1 - p) / v = 2100 effective items, capped at 40; a zero variance takes the cap
    low, high = h.korn_graubard(0.3, 1e-4, 50, 1, cap=40.0)
    assert (float(low), float(high)) == pytest.approx(clopper_pearson(12, 40), rel=1e-12)
    low, high = h.korn_graubard(0.3, 0.0, 50, 1, cap=40.0)
    assert (float(low), float(high)) == pytest.approx(clopper_pearson(12, 40), rel=1e-12)
    # an estimate without a defined variance (nan) takes the cap as well
    low, high = h.korn_graubard(0.3, np.nan, 50, 1, cap=40.0)
    assert (float(low), float(high)) == pytest.approx(clopper_pearson(12, 40), rel=1e-12)


def test_korn_graubard_with_a_centre_takes_its_p_1_minus_p_and_the_estimate_as_the_count():
    # p (1 - p) of the centre 0.5 over 0.01: 25 effective items (one stratum, t ratio 1)
    low, high = h.korn_graubard(0.2, 0.01, 40, 1, centre=0.5)
    assert (float(low), float(high)) == pytest.approx(clopper_pearson(5, 25), rel=1e-12)


def test_korn_graubard_with_no_variance_or_an_edge_centre_warns_of_nothing():
    """A census, a zero variance and a centre of 0 divide by zero on purpose (the cap or the estimate
    takes over): no RuntimeWarning may reach a command's output."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h.korn_graubard(np.array([0.3, 0.0]), np.array([0.0, 0.0]), 50, 1)
        h.korn_graubard(np.array([0.0, 0.4]), np.array([0.0, 0.01]), 50, 1, cap=40.0, centre=np.array([0.0, 0.4]))


def test_korn_graubard_with_no_variance_and_no_cap_is_the_estimate_itself():
    """Found by the mutation run: np.nan_to_num made the infinite effective size of a census the
    largest float, so the census branch was never taken (0.7 with no variance gave (0.69999999, 1.0))."""
    low, high = h.korn_graubard(np.array([0.3, 0.7]), np.array([0.0, 0.0]), 50, 1)
    assert low.tolist() == high.tolist() == [0.3, 0.7]


# --- allocation -------------------------------------------------------------------------------------


def test_allocations_worked_by_hand():
    # equal: the same per stratum, and what a small stratum cannot take goes to the others
    assert h.allocate({"a": 100, "b": 300, "c": 50}, 30, "equal") == {"a": 10, "b": 10, "c": 10}
    assert h.allocate({"a": 4, "b": 300, "c": 50}, 30, "equal") == {"a": 4, "b": 13, "c": 13}
    # proportional 7.5 / 7.5, the tie to the first; it has room for 2 only, the rest goes to b
    assert h.allocate({"a": 10, "b": 10}, 15, taken={"a": 8}) == {"a": 2, "b": 10}
    # a budget above what is left takes everything left
    assert h.allocate({"a": 3, "b": 5}, 100, taken={"a": 1}) == {"a": 2, "b": 5}
    # a stratum that gave more than its size (a changed frame) has no room, not a negative one
    assert h.allocate({"a": 5, "b": 5}, 4, taken={"a": 7}) == {"a": 0, "b": 4}
    assert h.allocate({"a": 100, "b": 300}, 0) == {"a": 0, "b": 0}
    # Neyman: a stratum without a spread counts 0.5 (weights 100 * 0.1 and 100 * 0.5)
    assert h.allocate({"a": 100, "b": 100}, 30, "neyman", spreads={"a": 0.1}) == {"a": 5, "b": 25}
    assert h.allocate({"a": 100, "b": 300}, 40, "neyman") == {"a": 10, "b": 30}
    # quotas 10 each; b fills its room of 12 over two rounds, c its 2 in the first; a takes the rest
    assert h.allocate({"a": 100, "b": 100, "c": 100}, 30, taken={"b": 88, "c": 98}) == {"a": 16, "b": 12, "c": 2}
    # Neyman weights summing to 1 or less are weights all the same (10 * 0.09 and 10 * 0.01)
    assert h.allocate({"a": 10, "b": 10}, 10, "neyman", spreads={"a": 0.09, "b": 0.01}) == {"a": 9, "b": 1}
    # a proportional allocation ignores the spreads it is given (the sample planner passes them)
    assert h.allocate({"a": 100, "b": 100}, 20, "proportional", spreads={"a": 0.5, "b": 0.1}) == {"a": 10, "b": 10}
    # nothing to learn anywhere (every spread 0): spread evenly
    assert h.allocate({"a": 100, "b": 300}, 40, "neyman", spreads={"a": 0.0, "b": 0.0}) == {"a": 20, "b": 20}


def test_an_allocation_refuses_an_unknown_method_and_a_negative_budget_in_words():
    with pytest.raises(ValueError) as refused:
        h.allocate({"a": 1}, 1, "best")
    assert str(refused.value) == "unknown allocation 'best'; expected one of ['equal', 'proportional', 'neyman']"
    with pytest.raises(ValueError) as refused:
        h.allocate({"a": 1}, -1)
    assert str(refused.value) == "a budget of -1 items; expected 0 or more"


def test_mccarthy_snowden_resample_sizes_worked_by_hand():
    # (n - 1) / (1 - n / N), rounded, at least 1; a census resamples a million
    assert h._resample_size(10, 100) == 10  # 9 / 0.9
    assert h._resample_size(41, 50) == 222  # 40 / 0.18 = 222.2
    assert h._resample_size(1, 10) == 1  # 0, at least 1
    assert h._resample_size(5, 5) == h._resample_size(6, 5) == 1_000_000


# --- Horvitz-Thompson and Poisson sampling --------------------------------------------------------


@pytest.mark.parametrize("inclusion", [[0.5, 0.0], [0.5, -0.1], [0.5, 1.5]])
def test_horvitz_thompson_refuses_inclusion_probabilities_outside_0_to_1(inclusion):
    with pytest.raises(ValueError) as refused:
        h.horvitz_thompson_total(np.array([1.0, 1.0]), np.array(inclusion))
    assert str(refused.value) == "every inclusion probability must be above 0 and at most 1"


def test_poisson_sampling_draws_each_item_with_its_inclusion_probability():
    rng = np.random.default_rng(3)
    drawn, inclusion = h.poisson_sample(np.array([1.0, 1.0, 2.0, 0.0]), 3, 0.1, rng)
    # 3 * priority / 4, at least the floor, at most 1 (1.5 is cut to 1)
    assert inclusion.tolist() == [0.75, 0.75, 1.0, 0.1]
    counts = np.zeros(4)
    for _ in range(2000):
        drawn, _ = h.poisson_sample(np.array([1.0, 1.0, 2.0, 0.0]), 3, 0.1, rng)
        counts[drawn] += 1
    assert counts[2] == 2000  # drawn for sure
    assert counts / 2000 == pytest.approx([0.75, 0.75, 1.0, 0.1], abs=0.04)
    # priorities summing to less than 1 are shares of their sum all the same
    _, inclusion = h.poisson_sample(np.array([0.1, 0.3]), 1, 0.01, rng)
    assert inclusion.tolist() == pytest.approx([0.25, 0.75], rel=1e-12)
    # no priority anywhere: every item at the floor
    _, inclusion = h.poisson_sample(np.zeros(3), 2, 0.2, rng)
    assert inclusion.tolist() == [0.2, 0.2, 0.2]
    for floor in (0.0, -0.1):
        with pytest.raises(ValueError) as refused:
            h.poisson_sample(np.ones(3), 2, floor, rng)
        assert str(refused.value) == "the floor of the inclusion probabilities must be above 0"


# --- accuracy on valid items ------------------------------------------------------------------------

# Per stratum: valid drawn, of them right, invalid drawn, of them right; the strata's sizes.
SAMPLE = {"A": (25, 18, 5, 2), "B": (36, 30, 4, 0)}
SIZES = {"A": 200, "B": 500}
# the ratio estimator by hand: (200 / 30 * 18 + 500 / 40 * 30) / (200 / 30 * 25 + 500 / 40 * 36)
ACCURACY = Fraction(495) / (Fraction(500, 3) + 450)
VALID_ITEMS = 617  # 500 / 3 + 450, rounded: the valid items the population is estimated to hold


def items(sample: dict[str, tuple[int, int, int, int]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Strata, valid flags and one run's credits of the items `sample` describes."""
    strata, valid, right = ratio_items(sample)
    return strata, valid, right[:, 0]


def with_runs(sample, *columns):
    """The sample's items with runs: "run" (as `sample` says), "zero" (never right), "copy" (the run again)."""
    strata, valid, right = items(sample)
    made = {"run": right, "zero": np.zeros_like(right), "copy": right}
    return strata, valid, np.column_stack([made[c] for c in columns]), list(columns)


def test_two_resamples_give_the_run_interval_from_their_variance_and_the_differences_from_their_percentiles():
    """A run set against one that is never right: their difference in each resample is the run's own
    accuracy, so the difference's percentiles over two resamples give both resamples back (linear
    interpolation: low = min + 0.025 (max - min)). The run's interval must then be svyciprop on
    their sample variance (max - min)^2 / 2, with n = 61 valid items drawn, 2 strata, and the
    effective size at most 61 (617 - 1) / (617 - 61)."""
    strata, valid, credits, runs = with_runs(SAMPLE, "run", "zero")
    board = h.valid_accuracy(strata, valid, credits, SIZES, runs, n_boot=2, seed=11)
    assert board.runs == ["run", "zero"]
    assert float(board.estimate[0]) == pytest.approx(float(ACCURACY), rel=1e-12)
    assert board.estimate[1] == 0.0
    gap, low, high = board.difference[("run", "zero")]
    assert gap == pytest.approx(float(ACCURACY), rel=1e-12)
    spread = (high - low) / 0.95
    smallest = low - 0.025 * spread
    assert spread > 0
    cap = 61 * (VALID_ITEMS - 1) / (VALID_ITEMS - 61)
    # seed 11's two resamples differ enough that the effective size (about 34) stays under the cap
    assert float(ACCURACY * (1 - ACCURACY)) / (spread**2 / 2) < cap / 1.5
    expected = svyciprop(float(ACCURACY), spread**2 / 2, 61, 2, cap=cap)
    assert (float(board.low[0]), float(board.high[0])) == pytest.approx(expected, rel=1e-9)
    # the same seed draws the same resamples at another level: its percentiles are 0.05 and 0.95
    other = h.valid_accuracy(strata, valid, credits, SIZES, runs, n_boot=2, seed=11, level=0.9)
    _, low_90, high_90 = other.difference[("run", "zero")]
    assert (low_90, high_90) == pytest.approx((smallest + 0.05 * spread, smallest + 0.95 * spread), rel=1e-12)
    expected = svyciprop(float(ACCURACY), spread**2 / 2, 61, 2, level=0.9, cap=cap)
    assert (float(other.low[0]), float(other.high[0])) == pytest.approx(expected, rel=1e-9)
    assert board.order_flip == {}


def test_a_run_right_on_every_valid_item_has_the_capped_effective_size():
    """No resample varies, so the effective size is the cap 61 (617 - 1) / (617 - 61): Clopper-Pearson
    of that many successes in as many trials."""
    sample = {"A": (25, 25, 5, 2), "B": (36, 36, 4, 0)}
    strata, valid, credits, runs = with_runs(sample, "run")
    board = h.valid_accuracy(strata, valid, credits, SIZES, runs, n_boot=50, seed=0)
    cap = 61 * (VALID_ITEMS - 1) / (VALID_ITEMS - 61)
    assert float(board.estimate[0]) == 1.0
    assert (float(board.low[0]), float(board.high[0])) == pytest.approx(clopper_pearson(cap, cap), rel=1e-12)


def test_order_flips_count_the_resamples_ordering_two_runs_against_the_published_order_and_ties_as_none():
    strata, valid, credits, runs = with_runs(SAMPLE, "run", "zero", "copy")
    # published: run below zero (every resample says otherwise), run above its copy (every resample
    # ties them: no flip), zero above the copy (every resample agrees: the copy is always ahead)
    board = h.valid_accuracy(strata, valid, credits, SIZES, runs, published=[60.0, 70.0, 50.0], n_boot=40, seed=1)
    assert board.order_flip == {("run", "zero"): 1.0, ("run", "copy"): 0.0, ("zero", "copy"): 1.0}
    assert board.difference[("run", "copy")] == (0.0, 0.0, 0.0)
    # published zero below the copy: never flipped; a published tie is never flipped either
    board = h.valid_accuracy(strata, valid, credits, SIZES, runs, published=[60.0, 40.0, 60.0], n_boot=40, seed=1)
    assert board.order_flip == {("run", "zero"): 0.0, ("run", "copy"): 0.0, ("zero", "copy"): 0.0}


def test_valid_accuracy_draws_the_same_resamples_for_the_same_seed_and_defaults_to_1000_from_seed_0():
    strata, valid, credits, runs = with_runs(SAMPLE, "run", "zero")
    default = h.valid_accuracy(strata, valid, credits, SIZES, runs)
    explicit = h.valid_accuracy(strata, valid, credits, SIZES, runs, n_boot=1000, seed=0, level=0.95)
    assert (default.low.tolist(), default.high.tolist()) == (explicit.low.tolist(), explicit.high.tolist())
    assert default.difference == explicit.difference
    fewer = h.valid_accuracy(strata, valid, credits, SIZES, runs, n_boot=999, seed=0)
    other = h.valid_accuracy(strata, valid, credits, SIZES, runs, n_boot=1000, seed=1)
    assert fewer.difference != default.difference and other.difference != default.difference


def test_the_effective_size_divides_by_exactly_what_is_left_undrawn():
    assert float(h.effective_size(20, 21)) == 400.0  # 20 (21 - 1) / 1


def test_order_flips_are_a_share_of_every_resample():
    """Two runs as accurate as each other on the sample, right on different items: some resamples
    order them one way and some the other, and the share is a count of the 40 resamples over 40."""
    strata, valid, right = items(SAMPLE)
    credits = np.column_stack([right, np.roll(right, 1)])
    board = h.valid_accuracy(strata, valid, credits, SIZES, ["run", "other"], published=[60.0, 59.0], n_boot=40, seed=2)
    flips = board.order_flip[("run", "other")]
    assert 0 < flips < 1 and flips * 40 == round(flips * 40), flips


def test_strata_mostly_drawn_keep_their_coverage_where_a_rare_one_is_left_open_beside_common_ones():
    """The coverage grid's failing shape, as a seeded simulation: Neyman's plan counts the common bins
    whole and draws 90% of a rare one and of a 5% one. Korn and Graubard's interval over all four
    covered 0.938 (1,000 draws); counted bins apart and the effective size capped, every draw here."""
    rng = np.random.default_rng(0)
    sizes, shares, drawn = np.array([300, 100, 60, 40]), np.array([0.01, 0.05, 0.4, 0.6]), np.array([270, 90, 60, 40])
    held = 0
    for _ in range(400):
        populations = [rng.random(size) < share for size, share in zip(sizes, shares, strict=True)]
        truth = sum(int(p.sum()) for p in populations) / sizes.sum()
        found = [int(rng.permutation(p)[:d].sum()) for p, d in zip(populations, drawn, strict=True)]
        share = h.stratified_share(found, drawn, sizes)
        held += share.low <= truth <= share.high
    assert held / 400 >= 0.95

"""Prediction-powered invalid shares (`analysis/prediction_powered.py`): pinned to a hand-worked
example and to statsmodels' least squares (the regression estimator), with the properties a survey
statistician checks (a census is exact, a useless predictor gives back the plain interval, a good
one is worth more human answers than were given), every bad input refused, and coverage by
simulation (`coverage_row`, the table `bench/health_ppi_coverage.py` prints)."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from foil_studio.analysis.prediction_powered import (
    OVERALL_DISAGREEMENTS,
    disagreements_worth,
    power_weight,
    powered_stratified_share,
    powered_stratum_share,
    powered_valid_accuracy,
)


def test_a_hand_worked_stratum():
    """N = 40 items, predictions [1,0,0,1,1,0,0,0] five times over (F = 3/8); people decided the first 20,
    exactly as predicted (8 invalid: mean 2/5). lambda = 1; estimate 2/5 + (3/8 - 2/5) = 3/8; residuals all 0,
    so the variance is the smoothing term alone: q = 2/24, (1 - 20/40) * (1/12)(11/12) / 20 = 11/5760."""
    population = np.tile([1, 0, 0, 1, 1, 0, 0, 0], 5)
    found = powered_stratum_share(population[:20], population[:20], population)
    assert found.weight == pytest.approx(1.0)
    assert found.powered.estimate == pytest.approx(3 / 8)
    assert found.variance == pytest.approx(11 / 5760)
    assert found.agreement == 1.0
    assert (found.powered.count, found.powered.decided, found.powered.size) == (8, 20, 40)
    few = powered_stratum_share(population[:19], population[:19], population)  # 19: the plain estimate
    assert few.weight == 0.0 and few.powered.estimate == pytest.approx(population[:19].mean())


def drawn_population(seed: int, size: int = 400, n: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A population with a probability-valued predictor (outcomes from it, with noise) and a sample."""
    rng = np.random.default_rng(seed)
    predicted = rng.beta(0.6, 2.0, size)
    outcomes = (rng.random(size) < 0.15 + 0.7 * predicted).astype(float)
    drawn = rng.choice(size, n, replace=False)
    return outcomes, predicted, drawn


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_estimate_and_variance_are_the_regression_estimators_of_statsmodels_least_squares(seed):
    """lambda is the least-squares slope of y on f; the estimate is y-bar + b (F - f-bar); the
    residual variance (n - 2 degrees of freedom) is statsmodels' mse_resid."""
    outcomes, predicted, drawn = drawn_population(seed)
    y, f = outcomes[drawn], predicted[drawn]
    fit = sm.OLS(y, sm.add_constant(f)).fit()
    n, size = len(y), len(predicted)
    found = powered_stratum_share(y, f, predicted)
    assert found.weight == pytest.approx(fit.params[1], rel=1e-10)
    assert found.powered.estimate == pytest.approx(y.mean() + fit.params[1] * (predicted.mean() - f.mean()), rel=1e-10)
    q = 2 / (n + 4)
    assert found.variance == pytest.approx((1 - n / size) * (fit.mse_resid + q * (1 - q)) / n, rel=1e-10)
    # the prediction-powered form: lambda times the mean prediction, plus the mean rectifier y - lambda f
    assert found.powered.estimate == pytest.approx(fit.params[1] * predicted.mean() + np.mean(y - fit.params[1] * f))


def test_the_interval_is_korn_graubard_on_the_effective_size_widened_one_item_each_way():
    """An independent computation: n_eff = c (1 - c) / v times (t_{n-1} / t_{n-1})^2 = 1 for one
    stratum, Clopper-Pearson (statsmodels' "beta") of p n_eff in n_eff, then 1 / N each side."""
    outcomes, predicted, drawn = drawn_population(7)
    found = powered_stratum_share(outcomes[drawn], predicted[drawn], predicted)
    p = found.powered.estimate
    n_eff = p * (1 - p) / found.variance
    low, high = proportion_confint(p * n_eff, n_eff, alpha=0.05, method="beta")
    assert found.powered.low == pytest.approx(low - 1 / 400, abs=1e-9)
    assert found.powered.high == pytest.approx(high + 1 / 400, abs=1e-9)


def test_strata_combine_with_population_weights_and_the_t_ratio_of_their_degrees_of_freedom():
    parts = {name: drawn_population(seed, size) for name, seed, size in (("a", 11, 300), ("b", 12, 900))}
    outcomes = {c: y[d] for c, (y, f, d) in parts.items()}
    predicted = {c: f[d] for c, (y, f, d) in parts.items()}
    population = {c: f for c, (y, f, d) in parts.items()}
    overall = powered_stratified_share(outcomes, predicted, population)
    each = {c: powered_stratum_share(outcomes[c], predicted[c], population[c]) for c in parts}
    weights = {"a": 0.25, "b": 0.75}
    assert overall.powered.estimate == pytest.approx(sum(weights[c] * each[c].powered.estimate for c in parts))
    assert overall.variance == pytest.approx(sum(weights[c] ** 2 * each[c].variance for c in parts))
    p, n = overall.powered.estimate, 120
    factor = (stats.t.ppf(0.975, n - 1) / stats.t.ppf(0.975, n - 2)) ** 2
    n_eff = p * (1 - p) / overall.variance * factor
    low, high = proportion_confint(p * n_eff, n_eff, alpha=0.05, method="beta")
    assert (overall.powered.low, overall.powered.high) == pytest.approx((low - 1 / 1200, high + 1 / 1200), abs=1e-9)
    assert overall.plain.size == 1200 and overall.plain.decided == 120


def test_a_census_is_exact_whatever_the_predictor():
    rng = np.random.default_rng(5)
    outcomes = (rng.random(30) < 0.3).astype(float)
    noise = rng.random(30)
    found = powered_stratum_share(outcomes, noise, noise)
    assert found.share.low == found.share.high == found.share.estimate == pytest.approx(outcomes.mean())
    assert found.powered.low == found.powered.high == pytest.approx(outcomes.mean())


def test_a_useless_predictor_gives_back_the_plain_interval():
    """A constant prediction carries nothing: lambda 0, the reported interval is the plain, exact one,
    and the worth is the n people decided."""
    outcomes, predicted, drawn = drawn_population(9)
    constant = np.full(400, 0.3)
    found = powered_stratum_share(outcomes[drawn], constant[drawn], constant)
    assert found.weight == 0.0 and not found.used and found.share == found.plain
    assert found.worth == pytest.approx(60)
    assert power_weight(np.array([1.0, 0.0]), np.array([1.0, 0.0])) == 0.0  # too few decided items
    assert power_weight(np.tile([1.0, 0.0], 9), np.tile([1.0, 0.0], 9)) == 0.0  # 18: still fewer than 20
    assert power_weight(np.tile([1.0, 0.0], 10), np.tile([1.0, 0.0], 10)) == 1.0


def test_a_good_predictor_is_worth_more_answers_than_were_given_and_narrows_the_interval():
    rng = np.random.default_rng(4)
    outcomes = (rng.random(2000) < 0.3).astype(float)
    predicted = np.where(rng.random(2000) < 0.97, outcomes, 1 - outcomes)
    drawn = rng.choice(2000, 100, replace=False)
    found = powered_stratum_share(outcomes[drawn], predicted[drawn], predicted)
    assert found.used and found.worth > 150
    assert found.share.high - found.share.low < 0.7 * (found.plain.high - found.plain.low)
    assert found.share.low <= outcomes.mean() <= found.share.high
    assert found.as_dict()["reported"] == "prediction-powered"


LABEL = r"\(a probability or a 0/1 label\)"


@pytest.mark.parametrize(
    ("outcomes", "predicted", "population", "message"),
    [
        ([1, 0], [1], [1, 0, 0], "2 outcomes but 1 predictions of the decided items"),
        ([], [], [1, 0], "a stratum needs at least one decided item for an estimate"),
        ([1, 0, 1], [1, 0, 1], [1, 0], "3 decided items in a stratum of 2"),
        ([1, 0], [1.5, 0], [1, 0, 0], "decided items' predictions must lie between 0 and 1 " + LABEL),
        ([1, 0], [1, 0], [1, 0, -0.2], "predictions must lie between 0 and 1 " + LABEL),
        ([1, 2], [1, 0], [1, 0, 0], "outcomes must be 0 .valid or ambiguous. or 1 .invalid."),
    ],
)
def test_bad_inputs_are_refused_naming_what_was_expected(outcomes, predicted, population, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        powered_stratum_share(outcomes, predicted, population)


def test_one_decided_item_is_enough_for_a_stratum_and_a_census_is_allowed():
    one = powered_stratum_share([1], [0.5], [0.5, 0.2, 0.0])
    assert one.plain.decided == 1 and one.plain.low < one.plain.estimate == 1.0
    assert powered_stratum_share([1, 0], [1, 0], [1, 0]).share.low == 0.5


def test_strata_must_be_the_same_in_all_three_maps():
    message = "^outcomes, predictions of the decided items and of every item need the same strata$"
    with pytest.raises(ValueError, match=message):
        powered_stratified_share({"a": [1]}, {"b": [1]}, {"a": [1, 0]})
    with pytest.raises(ValueError, match=message):
        powered_stratified_share({}, {}, {})


# --- coverage by simulation ------------------------------------------------------------------------

# (N, invalid share, predictor agreement, share of the category drawn): a useless predictor (0.5),
# one that agrees on 85% and 95% of items, a near-perfect one; rare and common shares; near a census.
CONDITIONS = [
    (size, share, agreement, drawn)
    for size in (50, 500, 5000)
    for share in (0.02, 0.1, 0.3)
    for agreement in (0.5, 0.85, 0.95, 0.99)
    for drawn in (0.05, 0.2, 0.5, 0.9)
    if round(drawn * size) >= 5
]
REPS = 400


def coverage_row(size: int, share: float, agreement: float, drawn: float, reps: int = REPS) -> dict[str, float]:
    """One condition: a population of `size` with `share` invalid and a 0/1 predictor agreeing with
    people on each item with probability `agreement`, sampled `reps` times (`drawn` of it each)."""
    rng = np.random.default_rng(round(size * 1000 + share * 100 + agreement * 10 + drawn))
    outcomes = (rng.random(size) < share).astype(float)
    predicted = np.where(rng.random(size) < agreement, outcomes, 1 - outcomes)
    truth, n = outcomes.mean(), round(drawn * size)
    held = plain_held = used = 0
    width = plain_width = 0.0
    for _ in range(reps):
        sample = rng.choice(size, n, replace=False)
        found = powered_stratum_share(outcomes[sample], predicted[sample], predicted)
        held += found.share.low <= truth <= found.share.high
        plain_held += found.plain.low <= truth <= found.plain.high
        width += found.share.high - found.share.low
        plain_width += found.plain.high - found.plain.low
        used += found.used
    return {
        "coverage": held / reps,
        "plain_coverage": plain_held / reps,
        "width_ratio": width / plain_width,
        "used": used / reps,
    }


@pytest.mark.parametrize(
    "condition",
    [(50, 0.1, 0.99, 0.9), (500, 0.3, 0.95, 0.2), (5000, 0.02, 0.99, 0.05), (500, 0.1, 0.5, 0.5), (50, 0.3, 0.85, 0.5)],
)
def test_coverage_holds_from_a_useless_to_a_near_perfect_predictor(condition):
    """The conditions where an interval built for smooth estimates is most at risk (near a census,
    a rare share with few disagreements) and the useless predictor; the full grid is in TESTING.md."""
    row = coverage_row(*condition)
    assert row["coverage"] >= 0.93, row
    assert row["width_ratio"] <= 1.0 + 1e-12, row  # never wider than the plain interval


def test_a_predictor_agreeing_on_95_percent_halves_the_interval_of_a_30_percent_share():
    row = coverage_row(5000, 0.3, 0.95, 0.05, reps=200)
    assert row["width_ratio"] < 0.6 and row["coverage"] >= 0.93


# --- accuracy on valid items -------------------------------------------------------------------------


def valid_world(seed: int, sizes=(300, 600), n=(40, 60), agreement=0.9):
    """Strata of items with validity, a run's credit (right more often on valid items) and a 0/1
    prediction of validity; and the drawn items of each stratum."""
    rng = np.random.default_rng(seed)
    world = {}
    for number, (size, drawn) in enumerate(zip(sizes, n, strict=True)):
        valid = (rng.random(size) < 0.8).astype(float)
        credit = (rng.random(size) < np.where(valid == 1, 0.75, 0.4)).astype(float)[:, None]
        predicted = np.where(rng.random(size) < agreement, valid, 1 - valid)
        world[f"c{number}"] = (valid, credit, predicted, rng.choice(size, drawn, replace=False))
    return world


def accuracy_of(world):
    from foil_studio.analysis.prediction_powered import powered_valid_accuracy

    return powered_valid_accuracy(
        {c: v[d] for c, (v, k, p, d) in world.items()},
        {c: p[d] for c, (v, k, p, d) in world.items()},
        {c: k[d] for c, (v, k, p, d) in world.items()},
        {c: p for c, (v, k, p, d) in world.items()},
        {c: k for c, (v, k, p, d) in world.items()},
        ["run"],
    )


def test_valid_accuracy_is_the_ratio_of_difference_estimators_with_least_squares_weights():
    """Each stratum's weight is the least-squares slope (statsmodels) of v (c - A) on g (c - A) at the
    plain ratio estimate A; the estimate is the ratio of the two weighted difference estimators."""
    world = valid_world(1)
    plain_top = sum(len(v) / len(d) * float(np.sum(v[d] * k[d, 0])) for v, k, p, d in world.values())
    plain_bottom = sum(len(v) / len(d) * float(np.sum(v[d])) for v, k, p, d in world.values())
    plain = plain_top / plain_bottom
    top = bottom = 0.0
    for v, k, p, d in world.values():
        u, w = v[d] * (k[d, 0] - plain), p[d] * (k[d, 0] - plain)
        slope = sm.OLS(u, sm.add_constant(w)).fit().params[1]
        top += slope * float(p @ k[:, 0]) + len(v) / len(d) * float(np.sum((v[d] - slope * p[d]) * k[d, 0]))
        bottom += slope * float(p.sum()) + len(v) / len(d) * float(np.sum(v[d] - slope * p[d]))
    assert accuracy_of(world).estimate[0] == pytest.approx(top / bottom, rel=1e-10)


def test_valid_accuracy_with_a_prediction_that_carries_nothing_is_the_plain_ratio_estimator_of_health():
    """Every item predicted invalid (g = 0): g (c - A) never varies, the weights are 0, and the
    estimate is `health.valid_accuracy`'s. (A constant g above 0 is not nothing: g c then carries the
    run's accuracy on every item.)"""
    from foil_studio.analysis.health import valid_accuracy

    world = {c: (v, k, np.zeros(len(v)), d) for c, (v, k, p, d) in valid_world(2).items()}
    powered = accuracy_of(world)
    strata = [c for c, (v, k, p, d) in world.items() for _ in d]
    plain = valid_accuracy(
        strata,
        np.concatenate([v[d] == 1 for v, k, p, d in world.values()]),
        np.concatenate([k[d] for v, k, p, d in world.values()]),
        {c: len(v) for c, (v, k, p, d) in world.items()},
        ["run"],
        n_boot=20,
    )
    assert powered.estimate[0] == pytest.approx(float(plain.estimate[0]), rel=1e-12)


def test_valid_accuracy_of_a_census_is_exact():
    world = {c: (v, k, p, np.arange(len(v))) for c, (v, k, p, d) in valid_world(3, sizes=(30, 50), n=(5, 5)).items()}
    found = accuracy_of(world)
    truth = sum(float(v @ k[:, 0]) for v, k, p, d in world.values()) / sum(v.sum() for v, k, p, d in world.values())
    assert found.estimate[0] == found.low[0] == found.high[0] == pytest.approx(truth)


@pytest.mark.parametrize("agreement", [0.5, 0.95])
def test_valid_accuracy_intervals_cover_the_truth(agreement):
    held = 0
    base = valid_world(4, sizes=(400, 1200), n=(30, 90), agreement=agreement)
    truth = sum(float(v @ k[:, 0]) for v, k, p, d in base.values()) / sum(v.sum() for v, k, p, d in base.values())
    rng = np.random.default_rng(5)
    for _ in range(200):
        world = {c: (v, k, p, rng.choice(len(v), len(d), replace=False)) for c, (v, k, p, d) in base.items()}
        found = accuracy_of(world)
        held += found.low[0] <= truth <= found.high[0]
    assert held / 200 >= 0.93


def brute_force_width(invalid: int, n: int, size: int, level: float = 0.95) -> float:
    """The exact interval's width for sampling without replacement, every K tried in turn (no bisection)."""
    from scipy import stats

    tail = (1 - level) / 2
    k = np.arange(size + 1)
    kept = k[(stats.hypergeom.sf(invalid - 1, size, k, n) > tail) & (stats.hypergeom.cdf(invalid, size, k, n) > tail)]
    return (kept.max() - kept.min()) / size


@pytest.mark.parametrize(
    ("share", "n", "size", "width", "level"),
    [(0.3, 100, 1000, 0.1, 0.95), (0.05, 40, 141, 0.09, 0.95), (0.3, 100, 1000, 0.1, 0.8)],
)
def test_the_worth_is_the_fewest_answers_whose_exact_plain_interval_is_as_narrow(share, n, size, width, level):
    """Not n (w_plain / w)^2: exact intervals shrink faster than 1 / sqrt(n) as a sample nears a census.
    Pinned to every m tried in turn with a brute-force hypergeometric interval, at the level asked."""
    from foil_studio.analysis.health import Share
    from foil_studio.analysis.prediction_powered import worth

    x = round(share * n)
    cited = Share(share, share - width / 2, share + width / 2, x, n, size)
    found = worth(cited, [x], [n], [size], level)
    widths = {m: brute_force_width(round(x / n * m), m, size, level) for m in range(n, size + 1)}
    assert brute_force_width(x, n, size, level) > width
    assert widths[int(found)] <= width + 1e-12 and widths[int(found) - 1] > width
    assert found <= size
    assert found < n * (brute_force_width(x, n, size, level) / width) ** 2  # the square-root rule overstates


def test_the_worth_is_the_answers_given_where_the_cited_interval_is_the_plain_one_and_at_most_every_item():
    from foil_studio.analysis.health import Share, stratified_share, stratum_share
    from foil_studio.analysis.prediction_powered import worth

    plain = stratified_share([3, 1], [40, 40], [141, 500])
    assert worth(plain, [3, 1], [40, 40], [141, 500]) == 80.0
    census_wide = Share(0.03, 0.03, 0.03, 4, 80, 641)
    assert worth(census_wide, [3, 1], [40, 40], [141, 500]) == 641.0
    at_80 = stratum_share(3, 40, 141, 0.8)  # as wide as the plain 80% interval: worth the answers given
    assert worth(at_80, [3], [40], [141], 0.8) == 40.0


def test_a_category_whose_predictions_carry_nothing_lends_the_overall_share_the_plain_variance():
    """Issue 52: a perfectly ranking but miscalibrated predictor (0.8 invalid, 0.6 valid) is constant on a
    sample with no invalid item; that category adds the plain design's smoothed variance to the overall
    share (1 / 42 of its items as if invalid), not four disagreements among all answers."""
    from foil_studio.analysis.health import stratified_variance

    rng = np.random.default_rng(3)
    sizes = {"rare": 500, "common": 300}
    outcomes, predicted, population = {}, {}, {}
    for c, size in sizes.items():
        truth = np.zeros(size)
        truth[: (10 if c == "rare" else 60)] = 1
        f = np.where(truth == 1, 0.8, 0.6)
        frame = np.flatnonzero(truth == 0) if c == "rare" else np.arange(size)  # the rare one's sample: all valid
        pick = rng.choice(frame, 40, replace=False)
        outcomes[c], predicted[c], population[c] = truth[pick], f[pick], f
    found = powered_stratified_share(outcomes, predicted, population)
    rare, _ = stratified_variance(np.array([0.0]), np.array([40.0]), np.array([500.0]))
    assert rare == pytest.approx((1 - 40 / 500) * (1 / 42) * (41 / 42) / 39)
    # the common category's predictions rank perfectly: its residuals vanish, leaving its floor only
    floor = disagreements_worth(OVERALL_DISAGREEMENTS, 80)
    common = (1 - 40 / 300) * floor / 40
    assert found.variance == pytest.approx((500 / 800) ** 2 * rare + (300 / 800) ** 2 * common)


def test_the_overall_variance_floors_each_category_at_four_disagreements_among_all_decided_items():
    from foil_studio.analysis.prediction_powered import OVERALL_DISAGREEMENTS, disagreements_worth

    rng = np.random.default_rng(8)
    sizes, drawn = {"a": 300, "b": 150}, {"a": 30, "b": 20}
    outcomes, predicted, population = {}, {}, {}
    for c, size in sizes.items():
        truth = (rng.random(size) < 0.3).astype(float)
        guess = np.where(rng.random(size) < 0.9, truth, 1 - truth)
        pick = rng.choice(size, drawn[c], replace=False)
        outcomes[c], predicted[c], population[c] = truth[pick], guess[pick], guess
    found = powered_stratified_share(outcomes, predicted, population)
    floor = disagreements_worth(OVERALL_DISAGREEMENTS, 50)
    q = 4 / 58
    assert floor == pytest.approx(q * (1 - q))
    expected = 0.0
    for c, size in sizes.items():
        y, f, n = outcomes[c], predicted[c], drawn[c]
        slope = np.cov(y, f, ddof=1)[0, 1] / np.var(f, ddof=1)
        residual = y - slope * f
        spread = np.sum((residual - residual.mean()) ** 2) / (n - 2) + floor
        expected += (size / 450) ** 2 * (1 - n / size) * spread / n
    assert found.variance == pytest.approx(expected)


World = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # category -> validity, credits, predicted validity


def accuracy_on_a_draw(world: World, n: int, runs: list[str], rng: np.random.Generator):
    """`powered_valid_accuracy` on n items drawn at random from each category of the world."""
    drawn = {c: rng.choice(len(v), n, replace=False) for c, (v, _, _) in world.items()}
    return powered_valid_accuracy(
        {c: v[drawn[c]] for c, (v, _, _) in world.items()},
        {c: g[drawn[c]] for c, (_, _, g) in world.items()},
        {c: k[drawn[c]] for c, (_, k, _) in world.items()},
        {c: g for c, (_, _, g) in world.items()},
        {c: k for c, (_, k, _) in world.items()},
        runs,
    )


def difference_row(size: int, valid_share: float, agreement: float, n: int, reps: int) -> dict[str, float]:
    """Two categories (N and N/2 items): run a right on 75% of valid and 40% of other items, run b on
    70% and 55% (b leads on all items, a on valid ones), credits paired; a 0/1 prediction of validity
    with the given agreement; n drawn per category `reps` times. Coverage and mean width of a - b."""
    rng = np.random.default_rng(size + n + round(100 * agreement))
    world = {}
    for name, items in (("a", size), ("b", size // 2)):
        valid = (rng.random(items) < valid_share).astype(float)
        luck = rng.random(items)  # shared: the two runs' credits are correlated, as on one item
        credit = np.stack([luck < np.where(valid == 1, 0.75, 0.4), luck < np.where(valid == 1, 0.7, 0.55)], 1)
        world[name] = (valid, credit.astype(float), np.where(rng.random(items) < agreement, valid, 1 - valid))
    valid_total = sum(v.sum() for v, _, _ in world.values())
    truth = sum(float(v @ (k[:, 0] - k[:, 1])) for v, k, _ in world.values()) / valid_total
    held, width = 0, 0.0
    for _ in range(reps):
        _, low, high = accuracy_on_a_draw(world, n, ["a", "b"], rng).difference[("a", "b")]
        held += low <= truth <= high
        width += high - low
    return {"coverage": held / reps, "width": width / reps, "truth": truth}


# (0.8, 0.85, 20): its third sample's tuned weights once left no estimate (a valid total below 0)
@pytest.mark.parametrize(
    ("valid_share", "agreement", "n"), [(0.8, 0.85, 40), (0.95, 0.95, 100), (0.8, 0.5, 20), (0.8, 0.85, 20)]
)
def test_the_paired_difference_of_two_runs_covers_its_true_value(valid_share, agreement, n):
    row = difference_row(500, valid_share, agreement, n, reps=150)
    assert row["coverage"] >= 0.93
    assert row["width"] < 1


def test_the_paired_difference_against_a_run_right_nowhere_is_the_other_runs_accuracy():
    rng = np.random.default_rng(4)
    valid = (rng.random(300) < 0.8).astype(float)
    guess = np.where(rng.random(300) < 0.9, valid, 1 - valid)
    credit = np.stack([(rng.random(300) < 0.7).astype(float), np.zeros(300), (rng.random(300) < 0.7)], axis=1)
    credit[:, 2] = credit[:, 0]  # a copy of the first run
    pick = rng.choice(300, 60, replace=False)
    found = powered_valid_accuracy(
        {"c": valid[pick]}, {"c": guess[pick]}, {"c": credit[pick]}, {"c": guess}, {"c": credit}, ["a", "none", "copy"]
    )
    estimate, low, high = found.difference[("a", "none")]
    assert estimate == pytest.approx(found.estimate[0])  # c_a - 0 is c_a: the same ratio, the same weights
    half = stats.t.ppf(0.975, 59) * np.sqrt(found.variance[0])
    assert (low, high) == (pytest.approx(estimate - half), pytest.approx(estimate + half))
    same, low, high = found.difference[("a", "copy")]
    assert same == pytest.approx(0) and low < 0 < high


def test_the_predictor_is_described_by_its_ranking_and_calibration_not_only_its_thresholded_agreement():
    """Issue 52: a predictor ranking every item perfectly but off-scale (0.8 invalid, 0.6 valid) was said to
    "agree with people on 6.8% of items". Its AUC is 1 (pinned to scipy's Mann-Whitney U / n1 n0), its mean
    prediction is shown beside the observed share, and the agreement at f >= 0.5 stays what it is."""
    rng = np.random.default_rng(11)
    truth = (rng.random(600) < 0.07).astype(float)
    f = np.where(truth == 1, 0.8, 0.6)
    drawn = rng.choice(600, 120, replace=False)
    y = truth[drawn]
    found = powered_stratum_share(y, f[drawn], f).as_dict()
    assert found["ranking_auc"] == 1.0
    assert found["mean_prediction"] == pytest.approx(round(float(f[drawn].mean()), 4))
    assert found["observed_share"] == pytest.approx(round(float(y.mean()), 4))
    assert found["agreement"] == pytest.approx(round(float(y.mean()), 4))  # f >= 0.5 everywhere: right on invalid only
    noisy = np.clip(f + rng.normal(0, 0.15, 600), 0, 1)
    u = stats.mannwhitneyu(noisy[drawn][y == 1], noisy[drawn][y == 0]).statistic
    expected = u / ((y == 1).sum() * (y == 0).sum())
    assert powered_stratum_share(y, noisy[drawn], noisy).ranking == pytest.approx(expected)
    nothing_invalid = powered_stratum_share(np.zeros(10), np.linspace(0, 1, 10), np.linspace(0, 1, 40))
    assert nothing_invalid.ranking is None and nothing_invalid.as_dict()["ranking_auc"] is None


@pytest.mark.parametrize(
    ("x", "n", "size", "width", "level"),
    [(30, 100, 1000, 0.1, 0.95), (2, 40, 141, 0.09, 0.95), (30, 100, 100_000, 0.04, 0.95), (30, 100, 5000, 0.05, 0.8)],
)
def test_the_worths_bisection_starts_from_a_narrow_bracket_that_holds_the_answer(x, n, size, width, level):
    """One stratum: `_bracket` guesses from Clopper-Pearson on the effective size, then widens to the
    answers given or a census where the exact widths say the guess missed; the bracket holds the answer
    (the plain width above the wanted one at its low end, not at its high end) and is a tenth of the guess
    (at least 5 answers) each way, not the whole range."""
    from foil_studio.analysis.prediction_powered import _bracket, plain_width

    widest = plain_width(n, [x], [n], [size], level)
    low, high = _bracket(width, widest, [x], [n], [size], level)
    assert plain_width(low, [x], [n], [size], level) > width >= plain_width(high, [x], [n], [size], level)
    middle = (low + high) / 2
    assert high - low <= 2 * max(5, middle // 10) + 2 and n <= low < high < size
    assert _bracket(width, widest, [x, 1], [n, 40], [size, 500], 0.95) == (n + 40, size + 500)  # strata: no guess


def test_the_leaderboards_worth_keeps_the_square_root_rule_up_to_the_items_there_are():
    from foil_studio.analysis.prediction_powered import worth_of_widths

    assert worth_of_widths(100, 0.2, 0.1, 1000) == pytest.approx(400.0)
    assert worth_of_widths(100, 0.2, 0.15, 1000) == pytest.approx(100 * (0.2 / 0.15) ** 2)
    same = worth_of_widths(100, 0.2, 0.2, 1000)
    assert worth_of_widths(100, 0.2, None, 1000) == same == worth_of_widths(100, 0.2, 0.3, 1000) == 100.0
    assert worth_of_widths(100, 0.2, 0.0, 1000) == 100.0  # a census: no width to compare
    assert worth_of_widths(100, 0.2, 0.05, 500) == 500.0  # 1,600 by the rule, but only 500 items there


def test_the_difference_interval_takes_n_minus_k_degrees_of_freedom_and_stays_within_minus_one_and_one():
    """Two runs' accuracy difference: a t interval on n - K degrees of freedom (its width at one and
    at two degrees of freedom, on the same variance, in the ratio of scipy's t quantiles), never
    past -1 or 1 however wide."""
    from foil_studio.analysis.prediction_powered import _difference

    rng = np.random.default_rng(0)
    valid = (rng.random(200) < 0.8).astype(float)
    predicted = np.clip(0.7 * valid + 0.3 * rng.random(200), 0, 1)
    credits = (rng.random((200, 2)) < [0.8, 0.6]).astype(float)
    parts = [(valid, predicted, credits, rng.random(1000), (rng.random((1000, 2)) < [0.8, 0.6]).astype(float))]
    estimate, low1, high1 = _difference(parts, 0, 1, n=2, n_strata=1, level=0.95)
    same, low2, high2 = _difference(parts, 0, 1, n=3, n_strata=1, level=0.95)
    assert same == estimate and -1 < low1 < estimate < high1 < 1
    ratio = float(stats.t.ppf(0.975, 1) / stats.t.ppf(0.975, 2))
    assert (high1 - low1) / (high2 - low2) == pytest.approx(ratio)
    assert _difference(parts, 0, 1, n=2, n_strata=1, level=0.999999)[1:] == (-1.0, 1.0)


def korn_graubard_by_hand(
    estimate: float, variance: float, n: int, strata: int, level: float = 0.95
) -> tuple[float, float]:
    """Korn and Graubard's interval written out with scipy's beta and t: Clopper-Pearson on the
    effective size p (1 - p) / v (t_{n-1} / t_{n-K})^2, p kept within 1 / (n + 2) of 0 and 1."""
    tail = (1 - level) / 2
    p = min(max(estimate, 0.0), 1.0)
    centre = min(max(p, 1 / (n + 2)), 1 - 1 / (n + 2))
    t_ratio = stats.t.ppf(1 - tail, n - 1) / stats.t.ppf(1 - tail, n - strata)
    size = max(centre * (1 - centre) / variance * t_ratio**2, 1.0)
    x = p * size
    low = 0.0 if x <= 0 else float(stats.beta.ppf(tail, x, size - x + 1))
    high = 1.0 if x >= size else float(stats.beta.ppf(1 - tail, x + 1, size - x))
    return low, high


@pytest.mark.parametrize("right_when_valid", [0.75, 0.998], ids=["ordinary", "near-one"])
def test_valid_accuracy_interval_is_korn_and_graubards_on_its_variance(right_when_valid):
    """The cited interval, recomputed by hand from the estimate and variance the function reports;
    near 1 the effective size is taken at 1 - 1 / (n + 2), not at the estimate (whose p (1 - p)
    would make the interval a point)."""
    rng = np.random.default_rng(11)
    world = {}
    for number, (size, drawn) in enumerate(((300, 50), (600, 70))):
        valid = (rng.random(size) < 0.8).astype(float)
        credit = (rng.random(size) < np.where(valid == 1, right_when_valid, 0.4)).astype(float)[:, None]
        predicted = np.where(rng.random(size) < 0.9, valid, 1 - valid)
        world[f"c{number}"] = (valid, credit, predicted, rng.choice(size, drawn, replace=False))
    found = accuracy_of(world)
    estimate, variance = float(found.estimate[0]), float(found.variance[0])
    assert variance > 0
    low, high = korn_graubard_by_hand(estimate, variance, 120, 2)
    assert (float(found.low[0]), float(found.high[0])) == pytest.approx((low, high), abs=1e-9)
    assert 0 < high - low < 0.5  # an interval, not [0, 1]


def test_a_ratio_whose_estimated_valid_total_is_not_positive_is_no_estimate():
    """The ratio's valid total, by hand: weight x (the predictions' total) + N / n x (sum of y - weight
    x f) over the drawn items; at 0 or below there is no ratio (nan), which `_fit` then replaces by the
    plain one, and a plain ratio (no weights) of nothing decided is none either."""
    from foil_studio.analysis.prediction_powered import _ratio, _ratio_weight

    y, f = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    credits, whole = np.array([[1.0], [0.0]]), np.zeros(4)
    parts = [(y, f, credits, whole, np.zeros((4, 1)))]
    assert _ratio(parts, 0, [0.5]) == pytest.approx((2 * 1.0) / (2 * (1 - 0.5)))  # valid total 1: a ratio
    assert np.isnan(_ratio(parts, 0, [1.0]))  # valid total 2 (1 - 1) = 0
    assert np.isnan(_ratio(parts, 0, [2.0]))  # valid total -2
    assert _ratio_weight(y, f, credits[:, 0], float("nan")) == 0.0  # no plain estimate: no weight


def test_valid_accuracy_variance_is_the_linearised_one_written_out():
    """The ratio's linearised variance by hand: per stratum the residual r = y (c - A) - w g (c - A),
    w the least-squares slope (statsmodels) at the plain ratio, its variance on n - 2 degrees of
    freedom plus two disagreements' worth, times N^2 (1 - n / N) / n; summed, over the estimated
    valid total squared."""
    from foil_studio.analysis.prediction_powered import disagreements_worth

    world = valid_world(1)
    found = accuracy_of(world)
    accuracy = float(found.estimate[0])
    plain_top = sum(len(v) / len(d) * float(np.sum(v[d] * k[d, 0])) for v, k, p, d in world.values())
    plain = plain_top / sum(len(v) / len(d) * float(np.sum(v[d])) for v, k, p, d in world.values())
    spread_total = valid_total = 0.0
    for v, k, p, d in world.values():
        y, g, c, n, size = v[d], p[d], k[d, 0], len(d), len(v)
        slope = sm.OLS(y * (c - plain), sm.add_constant(g * (c - plain))).fit().params[1]
        residual = y * (c - accuracy) - slope * g * (c - accuracy)
        spread = float(np.var(residual, ddof=2)) + disagreements_worth(2, n)
        spread_total += size**2 * (1 - n / size) / n * spread
        valid_total += slope * float(p.sum()) + size / n * float(np.sum(y - slope * g))
    assert found.variance[0] == pytest.approx(spread_total / valid_total**2, rel=1e-9)


# --- what the report stores, and the level asked -----------------------------------------------------


def test_the_json_form_stores_every_figure_rounded_to_four_decimals():
    """Every key of `Powered.as_dict`, recomputed apart: the weight, ranking (scikit-learn's AUC),
    calibration and agreement to four decimals, the variance as it is, the worth to one decimal;
    "plain" where the predictor does not narrow the interval; no weight for strata combined."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(22)  # a draw whose five figures all have a fifth decimal
    truth = (rng.random(700) < 0.3).astype(float)
    f = np.clip(np.where(truth == 1, 0.7, 0.2) + rng.normal(0, 0.2, 700), 0, 1)
    drawn = rng.choice(700, 90, replace=False)
    y, fd = truth[drawn], f[drawn]
    found = powered_stratum_share(y, fd, f)
    stored = found.as_dict()
    assert found.used and stored["reported"] == "prediction-powered"
    assert stored["prediction_powered"] == found.powered.as_dict() and stored["plain"] == found.plain.as_dict()
    assert stored["variance"] == found.variance
    expected = {
        "weight": found.weight,
        "ranking_auc": roc_auc_score(y, fd),
        "mean_prediction": fd.mean(),
        "observed_share": y.mean(),
        "agreement": np.mean((fd >= 0.5) == (y == 1)),
    }
    for key, value in expected.items():
        assert stored[key] == round(float(value), 4) != round(float(value), 5), key  # the fifth decimal cut
    assert stored["worth_human_answers"] == round(found.worth, 1) > 90
    assert set(stored) == {"reported", "prediction_powered", "plain", "variance", *expected, "worth_human_answers"}
    useless = powered_stratum_share(y, np.full(90, 0.3), np.full(700, 0.3)).as_dict()
    assert useless["reported"] == "plain" and useless["weight"] == 0.0
    combined = powered_stratified_share({"a": y}, {"a": fd}, {"a": f}).as_dict()
    assert combined["weight"] is None and combined["reported"] == "prediction-powered"


@pytest.mark.parametrize(
    ("estimate", "variance", "n", "strata", "size", "level"),
    [
        (0.0, 0.0004, 40, 1, 200, 0.95),  # at 0: the effective size at 1 / (n + 2)
        (1.0, 0.0004, 40, 2, 200, 0.9),  # at 1: at 1 - 1 / (n + 2), and the interval stops at 1
        (1.3, 0.0004, 40, 1, 200, 0.95),  # a difference estimate past 1 is clipped
        (-0.1, 0.001, 60, 3, 500, 0.95),
        (0.3, 0.004, 60, 3, 500, 0.8),
    ],
)
def test_the_difference_interval_is_korn_graubards_by_hand_widened_one_item_each_way(
    estimate, variance, n, strata, size, level
):
    from foil_studio.analysis.prediction_powered import difference_interval

    found = difference_interval(estimate, variance, n, strata, 7, size, level)
    low, high = korn_graubard_by_hand(estimate, variance, n, strata, level)
    assert found.estimate == min(max(estimate, 0.0), 1.0)
    assert (found.low, found.high) == pytest.approx((max(low - 1 / size, 0.0), min(high + 1 / size, 1.0)), abs=1e-9)
    assert (found.count, found.decided, found.size) == (7, n, size)


def test_a_difference_estimate_without_variance_is_the_point_itself():
    from foil_studio.analysis.health import Share
    from foil_studio.analysis.prediction_powered import difference_interval

    assert difference_interval(0.25, 0.0, 30, 1, 7, 100) == Share(0.25, 0.25, 0.25, 7, 30, 100)
    assert difference_interval(1.2, 0.0, 30, 1, 30, 100) == Share(1.0, 1.0, 1.0, 30, 30, 100)


def test_one_stratum_at_another_level_takes_that_level_for_both_intervals():
    """At 80%: the plain interval is `health.stratum_share`'s at 80% and the prediction-powered one
    Korn and Graubard's at 80% (both narrower than at 95%); where both are equally wide (a census)
    the plain one is reported."""
    from foil_studio.analysis.health import stratum_share
    from foil_studio.analysis.prediction_powered import difference_interval

    outcomes, predicted, drawn = drawn_population(9)
    found = powered_stratum_share(outcomes[drawn], predicted[drawn], predicted, level=0.8)
    invalid = int(outcomes[drawn].sum())
    assert found.plain == stratum_share(invalid, 60, 400, 0.8)
    expected = difference_interval(found.powered.estimate, found.variance, 60, 1, invalid, 400, 0.8)
    assert found.powered == expected
    wider = powered_stratum_share(outcomes[drawn], predicted[drawn], predicted)
    assert wider.powered.high - wider.powered.low > expected.high - expected.low
    census = powered_stratum_share(outcomes, predicted, predicted)
    assert census.powered.high == census.powered.low and not census.used and census.share is census.plain


def test_booleans_are_taken_as_zero_and_one():
    """Outcomes, 0/1 predictions and credits may come as booleans (a label, right or wrong): the
    figures are those of the same values as floats."""
    from foil_studio.analysis.prediction_powered import powered_valid_accuracy

    world = valid_world(6)
    y = {c: v[d] for c, (v, k, p, d) in world.items()}
    g = {c: p[d] for c, (v, k, p, d) in world.items()}
    whole = {c: p for c, (v, k, p, d) in world.items()}
    twice = {c: np.hstack([k, 1 - k]) for c, (v, k, p, d) in world.items()}
    decided = {c: twice[c][d] for c, (v, k, p, d) in world.items()}

    def as_bools(values):
        return {c: np.asarray(v).astype(bool) for c, v in values.items()}

    floats = powered_valid_accuracy(y, g, decided, whole, twice, ["a", "b"])
    bools = powered_valid_accuracy(*map(as_bools, (y, g, decided, whole, twice)), ["a", "b"])
    assert bools.estimate == pytest.approx(floats.estimate) and bools.variance == pytest.approx(floats.variance)
    assert bools.difference[("a", "b")] == pytest.approx(floats.difference[("a", "b")])
    labels = np.tile([True, False, False, True], 6)
    assert power_weight(labels, labels) == power_weight(labels.astype(float), labels.astype(float)) == 1.0


def test_valid_accuracy_names_each_run_and_compares_each_pair_once_at_the_level_asked():
    """Three runs: the runs as given, the differences (a, b), (a, c), (b, c) and no other; at 80%
    every run's interval is Korn and Graubard's at 80% on its reported variance."""
    from foil_studio.analysis.prediction_powered import powered_valid_accuracy

    world = valid_world(7)
    rng = np.random.default_rng(7)
    third = {c: (rng.random(len(v)) < 0.6).astype(float)[:, None] for c, (v, k, p, d) in world.items()}
    runs = {c: np.hstack([k, 1 - k, third[c]]) for c, (v, k, p, d) in world.items()}
    found = powered_valid_accuracy(
        {c: v[d] for c, (v, k, p, d) in world.items()},
        {c: p[d] for c, (v, k, p, d) in world.items()},
        {c: runs[c][d] for c, (v, k, p, d) in world.items()},
        {c: p for c, (v, k, p, d) in world.items()},
        runs,
        ("a", "b", "c"),
        level=0.8,
    )
    assert found.runs == ["a", "b", "c"]
    assert list(found.difference) == [("a", "b"), ("a", "c"), ("b", "c")]
    for r in range(3):
        low, high = korn_graubard_by_hand(float(found.estimate[r]), float(found.variance[r]), 100, 2, 0.8)
        assert (found.low[r], found.high[r]) == pytest.approx((low, high), abs=1e-9)


def test_a_run_right_on_no_valid_item_has_its_interval_from_one_over_n_plus_two():
    """An accuracy of 0: the effective size is taken at 1 / (n + 2), not at 0 (which would make the
    interval the point 0)."""
    world = {c: (v, np.zeros_like(k), p, d) for c, (v, k, p, d) in valid_world(8).items()}
    found = accuracy_of(world)
    assert found.estimate[0] == 0.0 and found.variance[0] > 0
    low, high = korn_graubard_by_hand(0.0, float(found.variance[0]), 100, 2)
    assert (found.low[0], found.high[0]) == pytest.approx((low, high), abs=1e-9) and high > 0


def test_the_ratio_variance_of_a_stratum_whose_weight_is_zero_spends_one_degree_of_freedom():
    """A weight of 0 (the plain ratio): the residual is y (c - A) alone, its variance on n - 1 degrees
    of freedom (none spent on a weight; at n = 2 that is 1, not 0) plus two disagreements' worth; no
    valid item decided anywhere leaves no variance to state (0), not a division by nothing."""
    from foil_studio.analysis.prediction_powered import _ratio_variance, disagreements_worth

    whole = np.full(10, 0.5)
    for y, c in ((np.ones(3), np.array([1.0, 0.0, 1.0])), (np.ones(2), np.array([1.0, 0.0]))):
        n = len(y)
        parts = [(y, np.full(n, 0.5), c[:, None], whole, np.zeros((10, 1)))]
        spread = float(np.var(y * (c - 0.5), ddof=1)) + disagreements_worth(2, n)
        expected = 10**2 * (1 - n / 10) / n * spread / (10 / n * n) ** 2
        assert _ratio_variance(parts, 0, [0.0], 0.5) == pytest.approx(expected), n
    nothing_valid = [(np.zeros(2), np.full(2, 0.5), np.array([[1.0], [0.0]]), whole, np.zeros((10, 1)))]
    assert _ratio_variance(nothing_valid, 0, [0.0], 0.5) == 0.0


def test_tuned_weights_that_leave_no_valid_total_give_way_to_the_plain_ratio_and_its_variance():
    """A predictor that matches every decided item but calls no other item valid: the tuned weight
    (1) makes the estimated valid total 0, so `_fit` takes the plain ratio with weights 0, its
    variance included."""
    from foil_studio.analysis.prediction_powered import _fit, _ratio, _ratio_variance

    rng = np.random.default_rng(3)
    y = np.tile([1.0, 0.0], 15)
    c = (rng.random(30) < 0.7).astype(float)[:, None]
    parts = [(y, y.copy(), c, np.zeros(90), np.zeros((90, 1)))]
    plain = _ratio(parts, 0, None)
    assert np.isnan(_ratio(parts, 0, [1.0]))
    assert _fit(parts, 0) == (plain, _ratio_variance(parts, 0, [0.0], plain))
    assert _ratio_variance(parts, 0, [0.0], plain) != _ratio_variance(parts, 0, [1.0], plain)


def test_strata_combined_take_the_level_asked_and_report_the_plain_interval_unless_narrower():
    """At 80%: the plain and the prediction-powered overall intervals at 80%; the powered one counts the
    invalid items people found; a useless predictor and a census report the plain interval."""
    from foil_studio.analysis.health import stratified_share
    from foil_studio.analysis.prediction_powered import difference_interval

    parts = {name: drawn_population(seed, size) for name, seed, size in (("a", 11, 300), ("b", 12, 900))}
    outcomes = {c: y[d] for c, (y, f, d) in parts.items()}
    predicted = {c: f[d] for c, (y, f, d) in parts.items()}
    population = {c: f for c, (y, f, d) in parts.items()}
    found = powered_stratified_share(outcomes, predicted, population, level=0.8)
    invalid = [int(outcomes[c].sum()) for c in parts]
    assert found.plain == stratified_share(invalid, [60, 60], [300, 900], 0.8)
    assert found.powered == difference_interval(found.powered.estimate, found.variance, 120, 2, sum(invalid), 1200, 0.8)
    assert found.powered.count == sum(invalid) > 0
    constant = {c: np.full(len(f), 0.3) for c, f in population.items()}
    useless = powered_stratified_share(outcomes, {c: v[:60] for c, v in constant.items()}, constant)
    assert not useless.used and useless.share is useless.plain
    everything = {c: y for c, (y, f, d) in parts.items()}
    census = powered_stratified_share(everything, population, population)
    assert census.plain.high == census.plain.low and census.share is census.plain


def test_the_plain_width_at_other_answers_scales_every_stratum_alike_keeping_its_share():
    """`plain_width(m, ...)`: m answers spread over the strata as the decided ones are (n_c m / n, at
    least 1 and at most the stratum), each stratum's observed share kept; one stratum takes the exact
    hypergeometric interval of a whole count, several Korn and Graubard's stratified one."""
    from foil_studio.analysis.health import stratified_share, stratum_share
    from foil_studio.analysis.prediction_powered import plain_width

    def width(share):
        return share.high - share.low

    assert plain_width(50, [6], [20], [400]) == width(stratum_share(15, 50, 400))
    assert plain_width(50, [6], [20], [400], 0.8) == width(stratum_share(15, 50, 400, 0.8))
    assert plain_width(0, [6], [20], [400]) == width(stratum_share(0, 1, 400))  # at least one answer
    assert plain_width(90, [3, 6], [10, 20], [100, 400], 0.9) == width(
        stratified_share([9.0, 18.0], [30.0, 60.0], [100.0, 400.0], 0.9)
    )
    scaled = np.array([3 / 21, 60 / 21])  # 3 answers over strata decided 1 and 20: the first keeps one
    assert plain_width(3, [1, 6], [1, 20], [100, 400]) == pytest.approx(
        width(stratified_share([1.0, 6 / 20 * scaled[1]], [1.0, scaled[1]], [100.0, 400.0]))
    )
    assert plain_width(1000, [3, 6], [10, 20], [100, 400]) == width(
        stratified_share([30.0, 120.0], [100.0, 400.0], [100.0, 400.0])
    )  # never more than a stratum holds: a census

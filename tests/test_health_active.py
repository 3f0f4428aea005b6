"""Active sampling (`analysis/active_sampling.py`): inclusion probabilities that grow with a
predictor's uncertainty, the round-by-round estimate pinned to independent computations, the report
of a sample with an active batch (drawn before active draws were retired during 0.10.0; such batches
are rebuilt here with the rule they drew by), and new active draws refused with the reason by
`health.plan_sample`, the command line and the page."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from foil_studio.analysis import active_sampling as active
from foil_studio.analysis.prediction_powered import difference_interval, disagreements_worth, powered_stratum_share
from foil_studio.annotate import health
from foil_studio.annotate.health.sample import ACTIVE_RETIRED
from foil_studio.annotate.simulation import simulate
from foil_studio.data import store
from tests.test_cli import run_cli
from tests.test_health_predictions import DATASET, frame_items, write_jsonl

ANNOTATORS = ("ann-a", "ann-b", "ann-c")
DRAWN_TWICE = "each round draws distinct items of the stratum that no earlier round drew"


def test_inclusion_probabilities_follow_the_uncertainty_above_a_floor_and_sum_to_the_budget():
    spread = active.uncertainty(np.array([0.02, 0.5, 0.3, 0.98, 0.6, 0.01]))
    found = active.active_inclusion(spread, 3)
    assert found.sum() == pytest.approx(3)
    # n (a / R + (1 - a) u_i / sum u), by hand
    expected = 3 * (0.2 / 6 + 0.8 * spread / spread.sum())
    assert found == pytest.approx(expected)
    assert found.min() >= 3 * 0.2 / 6 - 1e-12
    assert np.argsort(found).tolist() == np.argsort(spread, kind="stable").tolist()


def test_a_probability_above_one_is_capped_and_its_excess_spread_over_the_others():
    found = active.active_inclusion(np.array([1.0, 0.0, 0.0, 0.0]), 2)
    # uncapped 2 (0.05 + 0.8) = 1.7 for the first: 1, and the others share 2 - 1 in proportion (equal)
    assert found.tolist() == pytest.approx([1.0, 1 / 3, 1 / 3, 1 / 3])
    assert active.active_inclusion(np.array([0.3, 0.1]), 5).tolist() == [1.0, 1.0]  # a census
    labels = active.active_inclusion(active.uncertainty(np.array([0.0, 1.0, 1.0, 0.0])), 2)
    assert labels.tolist() == pytest.approx([0.5] * 4)  # 0/1 labels: no item less certain than another


def test_one_random_round_is_the_prediction_powered_stratum_estimate():
    rng = np.random.default_rng(3)
    size, n = 300, 60
    truth = (rng.random(size) < 0.25).astype(float)
    predicted = np.clip(np.where(truth == 1, 0.7, 0.2) + rng.normal(0, 0.15, size), 0.01, 0.99)
    drawn = rng.choice(size, n, replace=False)
    found = active.rounds_estimate([active.Round(drawn, np.full(n, n / size), truth[drawn])], predicted)
    reference = powered_stratum_share(truth[drawn], predicted[drawn], predicted)
    assert found.estimate == pytest.approx(reference.powered.estimate, abs=1e-12)
    assert found.variance == pytest.approx(reference.variance, rel=1e-12)
    assert active.stratum_share(found, size).low == pytest.approx(reference.powered.low)


def test_an_active_round_after_a_random_one_matches_the_formulas_worked_by_hand():
    # ten items; round 1 drew 2, 5 at random (2 of 10); round 2 drew 0, 7, 9 actively
    predicted = np.array([0.1, 0.9, 0.5, 0.2, 0.8, 0.3, 0.6, 0.4, 0.7, 0.05])
    first = active.Round(np.array([2, 5]), np.array([0.2, 0.2]), np.array([1.0, 0.0]))
    second = active.Round(np.array([0, 7, 9]), np.array([0.25, 0.5, 0.4]), np.array([0.0, 1.0, 0.0]))
    found = active.rounds_estimate([first, second], predicted, weight=1.0)
    # round 1: remainder all 10; level a1 = mean(y - f) over its items
    a1 = ((1 - 0.5) + (0 - 0.3)) / 2
    total1 = predicted.sum() + 10 * a1
    # round 2: remainder the 8 undrawn; Hajek level over 1 / pi; plus the outcomes round 1 saw
    pi = np.array([0.25, 0.5, 0.4])
    y, f = np.array([0.0, 1.0, 0.0]), predicted[[0, 7, 9]]
    a2 = np.sum((y - f) / pi) / np.sum(1 / pi)
    rest = np.ones(10, bool)
    rest[[2, 5]] = False
    total2 = 1.0 + predicted[rest].sum() + 8 * a2
    d1, d2 = 2 * (1 - 0.2) / 0.2**2, np.sum((1 - pi) / pi**2)
    w1, w2 = (1 / d1) / (1 / d1 + 1 / d2), (1 / d2) / (1 / d1 + 1 / d2)
    assert found.estimate == pytest.approx((w1 * total1 + w2 * total2) / 10)
    # variances: the residual part with n / (n - 2), and two disagreements' worth as a random round of n adds it;
    # weights 1 / sum (1 - pi) / pi^2
    q1, q2 = 2 / 6 * (1 - 2 / 6), 2 / 7 * (1 - 2 / 7)
    e1 = np.array([0.5, -0.3]) - a1
    v1 = np.sum((1 - 0.2) / 0.2**2 * e1**2) * 2 / 1 + q1 * 10**2 * (1 - 2 / 10) / 2
    e2 = y - f - a2
    v2 = np.sum((1 - pi) / pi**2 * e2**2) * 3 / 1 + q2 * 8**2 * (1 - 3 / 8) / 3
    assert found.variance == pytest.approx((w1**2 * v1 + w2**2 * v2) / 100)
    assert (found.decided, found.count) == (5, 2)


def test_a_census_round_leaves_no_variance_and_gives_the_true_share():
    truth = np.array([1.0, 0.0, 0.0, 1.0, 0.0])
    first = active.Round(np.array([0, 1]), np.array([0.4, 0.4]), truth[[0, 1]])
    rest = active.Round(np.array([2, 3, 4]), np.ones(3), truth[[2, 3, 4]])
    found = active.rounds_estimate([first, rest], np.array([0.9, 0.1, 0.2, 0.6, 0.3]))
    share = active.stratum_share(found, 5)
    assert (found.variance, share.estimate, share.low, share.high) == (
        0,
        pytest.approx(0.4),
        share.estimate,
        share.estimate,
    )


@pytest.mark.parametrize(
    ("rounds", "message"),
    [
        (
            [active.Round(np.array([0, 1]), np.array([0.5]), np.array([1.0, 0.0]))],
            "a round needs one inclusion probability and one outcome per drawn item",
        ),
        (
            [active.Round(np.array([0]), np.array([0.0]), np.array([1.0]))],
            "every inclusion probability must be above 0 and at most 1",
        ),
        (
            [active.Round(np.array([0]), np.array([1.5]), np.array([1.0]))],
            "every inclusion probability must be above 0 and at most 1",
        ),
        ([active.Round(np.array([0]), np.array([0.5]), np.array([2.0]))], "outcomes must be 0, 1 or nan (undecided)"),
        (
            [
                active.Round(np.array([0]), np.array([0.5]), np.array([1.0])),
                active.Round(np.array([0]), np.array([0.5]), np.array([0.0])),
            ],
            DRAWN_TWICE,
        ),
        (  # the third round repeats the first's item: every earlier round counts, not the last alone
            [
                active.Round(np.array([0]), np.array([0.5]), np.array([1.0])),
                active.Round(np.array([1]), np.array([0.5]), np.array([0.0])),
                active.Round(np.array([0]), np.array([0.5]), np.array([0.0])),
            ],
            DRAWN_TWICE,
        ),
        ([active.Round(np.array([7]), np.array([0.5]), np.array([1.0]))], DRAWN_TWICE),
        ([active.Round(np.array([4]), np.array([0.5]), np.array([1.0]))], DRAWN_TWICE),  # one past the last
        (
            [active.Round(np.array([0]), np.array([0.5]), np.array([np.nan]))],
            "a stratum needs at least one decided item for an estimate",
        ),
    ],
)
def test_rounds_that_do_not_fit_the_design_are_refused(rounds, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        active.rounds_estimate(rounds, np.full(4, 0.5))


def test_a_round_nobody_decided_counts_its_items_at_the_stratums_fit_and_later_rounds_add_them():
    """Three rounds, the middle one drawn but not yet decided: its items count at the stratum's fit
    (lambda f + the decided items' mean of y - lambda f) among the items the third round's total
    knows; only the decided rounds are weighed (lambda fixed at 0.5). The first round's unequal
    probabilities make its Hajek level differ from its items' mean, so its outcomes, not its fit, must
    be what the later totals know."""
    predicted = np.array([0.1, 0.9, 0.5, 0.2, 0.8, 0.3, 0.6, 0.4, 0.7, 0.05])
    first = active.Round(np.array([2, 5]), np.array([0.2, 0.4]), np.array([1.0, 0.0]))
    undecided = active.Round(np.array([1, 4]), np.array([0.3, 0.3]), np.array([np.nan, np.nan]))
    third = active.Round(np.array([0, 7, 9]), np.array([0.25, 0.5, 0.4]), np.array([0.0, 1.0, 0.0]))
    found = active.rounds_estimate([first, undecided, third], predicted, weight=0.5)
    lam = 0.5
    decided_y, decided_f = np.array([1.0, 0.0, 0.0, 1.0, 0.0]), predicted[[2, 5, 0, 7, 9]]
    fit = np.mean(decided_y - lam * decided_f)
    pi1 = np.array([0.2, 0.4])
    a1 = np.sum((np.array([1.0, 0.0]) - lam * predicted[[2, 5]]) / pi1) / np.sum(1 / pi1)
    total1 = lam * predicted.sum() + 10 * a1
    pi = np.array([0.25, 0.5, 0.4])
    y, f = np.array([0.0, 1.0, 0.0]), predicted[[0, 7, 9]]
    a3 = np.sum((y - lam * f) / pi) / np.sum(1 / pi)
    known = 1.0 + np.sum(lam * predicted[[1, 4]] + fit)  # round 1's outcomes, round 2's items at the fit
    rest = np.ones(10, bool)
    rest[[2, 5, 1, 4]] = False
    total3 = known + lam * predicted[rest].sum() + 6 * a3
    d1, d3 = np.sum((1 - pi1) / pi1**2), np.sum((1 - pi) / pi**2)
    w1, w3 = (1 / d1) / (1 / d1 + 1 / d3), (1 / d3) / (1 / d1 + 1 / d3)
    assert found.estimate == pytest.approx((w1 * total1 + w3 * total3) / 10, rel=1e-12)
    assert (found.weight, found.decided, found.count) == (0.5, 5, 2)


def test_the_plain_estimate_of_one_round_spends_one_degree_of_freedom():
    """lambda 0 (no predictions): the residuals' variance has n - 1 in its divisor, not n - 2."""
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    found = active.rounds_estimate([active.Round(np.arange(6), np.full(6, 0.3), y)], np.zeros(20), weight=0.0)
    level = y.mean()
    residual = np.sum((1 - 0.3) / 0.3**2 * (y - level) ** 2) * 6 / 5
    floor = disagreements_worth(2, 6) * 20**2 * (1 - 6 / 20) / 6
    assert found.estimate == pytest.approx(level, rel=1e-12)
    assert found.variance == pytest.approx((residual + floor) / 20**2, rel=1e-12)


def test_a_stratums_and_the_strata_combined_share_are_korn_and_graubards_on_the_rounds_estimates():
    one = active.RoundEstimate(estimate=0.1, variance=0.0004, weight=0.3, decided=40, count=5)
    two = active.RoundEstimate(estimate=0.3, variance=0.0009, weight=0.0, decided=25, count=8)
    assert active.stratum_share(one, 200, level=0.9) == difference_interval(0.1, 0.0004, 40, 1, 5, 200, 0.9)
    combined = active.stratified_share([one, two], [100, 300], level=0.9)
    weights = np.array([0.25, 0.75])
    expected = difference_interval(0.25 * 0.1 + 0.75 * 0.3, float(weights**2 @ [0.0004, 0.0009]), 65, 2, 13, 400, 0.9)
    assert combined == expected
    assert (combined.count, combined.decided, combined.size) == (13, 65, 400)
    assert combined != active.stratified_share([one, two], [100, 300])  # the level is passed on


def test_an_expected_draw_of_every_item_left_includes_each_for_certain():
    assert active.active_inclusion(np.array([0.0, 0.5, 0.5, 0.0]), 4).tolist() == [1.0, 1.0, 1.0, 1.0]


def test_random_then_active_rounds_cover_the_true_share_and_are_about_unbiased():
    rng = np.random.default_rng(11)
    size, reps, hits, errors = 1000, 300, 0, []
    for _ in range(reps):
        truth = (rng.random(size) < 0.2).astype(float)
        predicted = 1 / (1 + np.exp(-(rng.normal(0, 1, size) + 2 * (2 * truth - 1) - 1.4)))
        first = rng.choice(size, 40, replace=False)
        rest = np.setdiff1d(np.arange(size), first)
        pi = active.active_inclusion(active.uncertainty(predicted[rest]), 60)
        picked = rng.random(len(rest)) < pi
        rounds = [
            active.Round(first, np.full(40, 40 / size), truth[first]),
            active.Round(rest[picked], pi[picked], truth[rest[picked]]),
        ]
        share = active.stratum_share(active.rounds_estimate(rounds, predicted), size)
        hits += share.low <= truth.mean() <= share.high
        errors.append(share.estimate - truth.mean())
    assert hits / reps >= 0.93
    assert abs(np.mean(errors)) < 0.005


def probability_rows(db, seed: int = 1) -> list[dict]:
    """A probability-valued predictor: about 0.75 on invalid items, 0.2 on the others, with noise."""
    rng = np.random.default_rng(seed)
    return [
        {
            "id": row["id"],
            "invalid": float(np.clip((0.75 if row["invalid"] else 0.2) + rng.normal(0, 0.15), 0.01, 0.99)),
        }
        for row in frame_items(db)
    ]


def answered_sample(db, tmp_path: Path) -> None:
    """A first random batch of 70, all answered, and probability predictions named judge."""
    health.import_predictions(db, DATASET, write_jsonl(tmp_path / "judge.jsonl", probability_rows(db)), "judge")
    plan = health.plan_sample(db, DATASET, 70)
    health.create_sample_batch(db, plan, ANNOTATORS, overlap=3, name="health-1")
    simulate(db, "health-1", accuracies=1.0, seed=0)


def legacy_active_plan(db, budget: int = 60, seed: int = 1) -> health.SamplePlan:
    """The draw `health next --strategy active --predictions judge` made before it was retired: the budget
    allocated over categories as a random draw would, then every item not drawn before on its own coin
    with `active_inclusion` probabilities of the judge's uncertainty."""
    planned = health.plan_sample(db, DATASET, budget, allocation="neyman", seed=seed)
    sample = health.read_sample(db, DATASET)
    found = store.get_predictions(db, DATASET, "judge")
    coins = random.Random(seed)
    drawn: dict[str, list[int]] = {}
    inclusion: dict[int, float] = {}
    for category, items in planned.drawn.items():
        rest = [i for i in sample.frame[category] if i not in sample.drawn]
        probabilities = active.active_inclusion(active.uncertainty(np.array([found[i] for i in rest])), len(items))
        picked = [(i, float(p)) for i, p in zip(rest, probabilities, strict=True) if coins.random() < p]
        drawn[category] = [i for i, _ in picked]
        inclusion.update(picked)
    expected = {c: len(items) for c, items in planned.drawn.items()}
    return replace(planned, drawn=drawn, strategy="active", predictions="judge", inclusion=inclusion, expected=expected)


def active_batch(db, budget: int = 60, seed: int = 1) -> dict:
    return health.create_sample_batch(db, legacy_active_plan(db, budget, seed), ANNOTATORS, overlap=3, name="health-2")


def test_an_active_batch_records_each_items_probability_given_the_batches_before(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    plan = legacy_active_plan(demo_db)
    created = health.create_sample_batch(demo_db, plan, ANNOTATORS, overlap=3, name="health-2")
    design = health.batch_design(demo_db, "health-2")
    assert (design["strategy"], design["predictions"], design["floor_share"]) == ("active", "judge", 0.2)
    first = set(health.batch_design(demo_db, "health-1")["items"])
    assert not first & set(design["items"])
    assert {int(i): e["inclusion"] for i, e in design["items"].items()} == {
        i: pytest.approx(p, abs=1e-9) for i, p in plan.inclusion.items()
    }
    for category, stratum in design["strata"].items():
        assert stratum["drawn"] == len(plan.drawn.get(category, []))
        assert stratum["expected"] == plan.expected.get(category, 0)
    assert sum(s["expected"] for s in design["strata"].values()) == 60
    assert created["drawn"] == len(design["items"])


def test_the_report_of_a_sample_with_an_active_batch_estimates_by_rounds_and_says_so(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    active_batch(demo_db)
    simulate(demo_db, "health-2", accuracies=1.0, seed=0)
    report = health.health_report(demo_db, DATASET, predictions="judge")
    assert report["estimator"] == "rounds"
    truth = np.mean([row["invalid"] for row in frame_items(demo_db)])
    overall = report["overall"]["invalid_share"]
    assert overall["interval"][0] <= truth <= overall["interval"][1]
    powered = report["prediction_powered"]["overall"]
    assert powered["prediction_powered"]["interval"][0] <= truth <= powered["prediction_powered"]["interval"][1]
    assert report["leaderboard"]["undefined"] == health.report.ACTIVE_LEADERBOARD
    assert [b["strategy"] for b in report["design"]["batches"]] == ["random", "active"]
    assert "drew actively" in report["methods"] and "predictions judge" in report["methods"]
    assert "hypergeometric" not in report["methods"]
    markdown = health.report_markdown(report)
    for word in ("nan", "None", "inf"):
        assert f" {word} " not in markdown and f"| {word}" not in markdown
    assert [row["draw"] for row in health.design_table(report)] == ["random", "active", ""]  # "" on the "all" row


def test_an_active_batch_nobody_has_answered_changes_no_interval(demo_db, tmp_path):
    """Issue 52: drawing an active batch widened every interval on screen 1.5-5x before anyone answered
    it; the estimates stand on the answered batches alone, so the report is the same before and after."""
    answered_sample(demo_db, tmp_path)
    before = health.health_report(demo_db, DATASET, predictions="judge")
    active_batch(demo_db)
    after = health.health_report(demo_db, DATASET, predictions="judge")
    assert after["estimator"] == before["estimator"] == "stratified"
    shares = ("invalid_share", "ambiguous_share", "invalid_or_ambiguous_share")
    assert [after["overall"][k] for k in shares] == [before["overall"][k] for k in shares]
    assert [[row[k] for k in shares] for row in after["strata"]] == [
        [row[k] for k in shares] for row in before["strata"]
    ]
    assert sum(row["drawn"] for row in after["strata"]) > sum(row["drawn"] for row in before["strata"])
    assert after["prediction_powered"] == before["prediction_powered"]
    with pytest.raises(health.HealthError, match="not decided yet \\(batch health-2\\)"):
        health.plan_sample(demo_db, DATASET, 20, allocation="neyman")  # what is left was shaped by it


def test_a_sample_of_random_batches_only_keeps_the_exact_intervals(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    report = health.health_report(demo_db, DATASET)
    assert report["estimator"] == "stratified"
    assert "hypergeometric" in report["methods"] and "drew actively" not in report["methods"]


def test_a_new_active_draw_is_refused_with_the_reason_and_the_draw_that_replaces_it(demo_db, tmp_path):
    """Issue 52: active draws made every interval wider than a random draw of the same budget; the
    draw by prediction replaces them."""
    answered_sample(demo_db, tmp_path)
    with pytest.raises(health.HealthError, match=f"^{re.escape(ACTIVE_RETIRED)}$"):
        health.plan_sample(demo_db, DATASET, 40, allocation="neyman", strategy="active", predictions="judge")
    assert "--strategy predicted --predictions NAME" in ACTIVE_RETIRED
    with pytest.raises(
        health.HealthError, match="unknown strategy 'greedy'; expected one of \\['neyman', 'predicted'\\]"
    ):
        health.plan_sample(demo_db, DATASET, 40, strategy="greedy")
    assert health.plan_sample(demo_db, DATASET, 40, strategy="predicted", predictions="judge").strategy == "predicted"
    assert len(health.health_batches(demo_db, DATASET)) == 1


def test_a_random_draw_after_an_active_batch_waits_for_its_outcomes(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    active_batch(demo_db)
    with pytest.raises(health.HealthError, match="not decided yet \\(batch health-2\\)"):
        health.plan_sample(demo_db, DATASET, 20, allocation="neyman")
    simulate(demo_db, "health-2", accuracies=1.0, seed=0)
    plan = health.plan_sample(demo_db, DATASET, 20, allocation="neyman")
    health.create_sample_batch(demo_db, plan, ANNOTATORS, overlap=3, name="health-3")
    simulate(demo_db, "health-3", accuracies=1.0, seed=0)
    report = health.health_report(demo_db, DATASET)
    assert report["design"]["decided"] == report["design"]["drawn"]
    assert report["overall"]["invalid_share"]["decided"] == report["design"]["drawn"]


def test_the_command_line_refuses_an_active_draw_and_predictions_without_a_draw_by_prediction(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    db_file = demo_db.conn.execute("PRAGMA database_list").fetchone()[2]
    active_draw = ("--budget", "40", "--strategy", "active", "--predictions", "judge")
    refused = run_cli("health", "next", DATASET, *active_draw, db=db_file)
    assert refused.returncode == 2
    assert f"argument --strategy: {ACTIVE_RETIRED}" in refused.stderr
    refused = run_cli("health", "next", DATASET, "--budget", "40", "--predictions", "judge", db=db_file)
    assert refused.returncode != 0
    assert "--predictions goes with --strategy predicted (a random draw uses none)" in refused.stderr
    assert len(health.health_batches(demo_db, DATASET)) == 1


def test_the_page_offers_no_active_draw_and_shows_a_stored_active_batchs_estimates_by_rounds(app, demo_db, tmp_path):
    from tests.conftest import APP_ADMIN

    answered_sample(demo_db, tmp_path)
    active_batch(demo_db)
    simulate(demo_db, "health-2", accuracies=1.0, seed=0)
    at = app(APP_ADMIN)
    at.switch_page("views/health.py").run()
    at.selectbox(key="health_dataset").set_value(DATASET).run()
    assert not at.exception and not at.error
    assert at.radio(key="health_strategy").options == ["at random", "by prediction"]
    shown = " ".join(m.value for m in at.markdown)
    assert "drew actively" in shown and "estimated for samples drawn at random only" in shown
    expected = health.powered_table(health.health_report(demo_db, DATASET, predictions="judge"))
    table = next(d.value for d in at.dataframe if "prediction-powered invalid % (95% CI)" in d.value.columns)
    assert table.to_dict("records") == expected


def test_the_prediction_powered_shares_of_a_sample_with_an_active_batch_are_its_rounds_written_out(demo_db, tmp_path):
    """Two random batches (one round: each a random draw of what is left, together a simple random
    sample of the category) and an active batch (a round of its own, at its recorded probabilities),
    all answered: each category's prediction-powered share is `rounds_estimate` on those two rounds
    built here from the batch designs, with the judge's predictions and a fitted weight, beside the
    plain one (predictions 0, weight 0); overall, the categories combined with weights N_c / N."""
    health.import_predictions(
        demo_db, DATASET, write_jsonl(tmp_path / "judge.jsonl", probability_rows(demo_db)), "judge"
    )
    for name, budget, seed in (("health-1", 40, 0), ("health-1b", 30, 5)):
        health.create_sample_batch(
            demo_db, health.plan_sample(demo_db, DATASET, budget, seed=seed), ANNOTATORS, overlap=3, name=name
        )
        simulate(demo_db, name, accuracies=1.0, seed=0)
    active_batch(demo_db)
    simulate(demo_db, "health-2", accuracies=1.0, seed=0)
    report = health.health_report(demo_db, DATASET, predictions="judge")
    predictions = store.get_predictions(demo_db, DATASET, "judge")
    frame = health.sampling_frame(demo_db, DATASET)
    verdicts = health.read_sample(demo_db, DATASET).verdicts
    random_items = {
        int(i): e["category"]
        for b in ("health-1", "health-1b")
        for i, e in health.batch_design(demo_db, b)["items"].items()
    }
    active_items = {int(i): e for i, e in health.batch_design(demo_db, "health-2")["items"].items()}
    plain, powered, sizes = [], [], []
    rows = {row["category"]: row for row in report["prediction_powered"]["by_category"]}
    for category, items in frame.items():
        position = {item: p for p, item in enumerate(items)}
        first = sorted(i for i, c in random_items.items() if c == category)
        later = sorted(i for i, e in active_items.items() if e["category"] == category)
        if not first:
            continue
        rounds = [
            active.Round(
                np.array([position[i] for i in first]),
                np.full(len(first), len(first) / len(items)),
                np.array([float(verdicts[i] == "invalid") for i in first]),
            ),
        ]
        if later:
            rounds.append(
                active.Round(
                    np.array([position[i] for i in later]),
                    np.array([active_items[i]["inclusion"] for i in later]),
                    np.array([float(verdicts[i] == "invalid") for i in later]),
                )
            )
        with_predictions = active.rounds_estimate(rounds, np.array([predictions[i] for i in items]))
        without = active.rounds_estimate(rounds, np.zeros(len(items)), weight=0.0)
        row = rows[category]
        assert row["prediction_powered"] == active.stratum_share(with_predictions, len(items)).as_dict()
        assert row["plain"] == active.stratum_share(without, len(items)).as_dict()
        assert (row["variance"], row["weight"]) == (with_predictions.variance, round(with_predictions.weight, 4))
        plain.append(without)
        powered.append(with_predictions)
        sizes.append(len(items))
    assert any(e.weight != 0 for e in powered) and len(powered) == len(rows)
    overall = report["prediction_powered"]["overall"]
    weights = np.array(sizes) / sum(sizes)
    assert overall["covers"] == sum(sizes)
    assert overall["prediction_powered"] == active.stratified_share(powered, sizes).as_dict()
    assert overall["plain"] == active.stratified_share(plain, sizes).as_dict()
    assert overall["variance"] == pytest.approx(float(weights**2 @ [e.variance for e in powered]), rel=1e-12)
    assert overall["weight"] is None
    for row in [*rows.values(), overall]:
        narrower = np.diff(row["prediction_powered"]["interval"])[0] < np.diff(row["plain"]["interval"])[0]
        assert row["reported"] == ("prediction-powered" if narrower else "plain")

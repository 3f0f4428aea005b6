"""Sampling stratified by the prediction (`analysis/prediction_strata.py`, `health next --strategy
predicted`): the bins and the allocation worked by hand, the draw recorded and kept, the estimates
with the bins as strata pinned to an independent stratified computation, the states a newcomer meets
(a batch nobody answered, one half answered, predictions imported again), refusals, the CLI and the page."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from foil_studio.analysis import health as h
from foil_studio.analysis import prediction_strata as ps
from foil_studio.annotate import health
from foil_studio.annotate.simulation import simulate
from foil_studio.data import store
from tests.test_cli import run_cli
from tests.test_health_active import ANNOTATORS, active_batch, answered_sample, probability_rows
from tests.test_health_predictions import DATASET, frame_items, write_jsonl


def test_the_cumulative_square_root_rule_cuts_where_worked_by_hand():
    """60 items at 0, 30 at 0.5, 10 at 1 in 100 classes of [0, 1]: sqrt counts 7.75, 5.48, 3.16 (total
    16.39); the quarters 4.10, 8.19, 12.29 are passed in class 0, class 50 and class 50: cuts at 0.01 and 0.51."""
    f = np.r_[np.zeros(60), np.full(30, 0.5), np.ones(10)]
    assert ps.cut_points(f) == pytest.approx([0.01, 0.51])
    assert np.bincount(ps.bin_of(f, ps.cut_points(f))).tolist() == [60, 30, 10]


@pytest.mark.parametrize("seed", range(5))
def test_bins_keep_their_smallest_size_and_a_constant_prediction_is_one_bin(seed):
    rng = np.random.default_rng(seed)
    f = np.clip(rng.beta(0.3, 4, 300), 0, 1)
    cuts = ps.cut_points(f)
    sizes = np.bincount(ps.bin_of(f, cuts), minlength=len(cuts) + 1)
    assert 2 <= len(sizes) <= ps.MAX_BINS and sizes.min() >= ps.SMALLEST_BIN and sizes.sum() == 300
    assert ps.cut_points(np.full(300, 0.4)) == [] and ps.cut_points(f[:9]) == []  # 9 items: no two bins of 5


def test_a_bin_holds_the_items_from_its_lower_cut_up_to_its_upper():
    assert ps.bin_of([0.0, 0.2, 0.21, 0.7, 0.99], [0.2, 0.7]).tolist() == [0, 1, 1, 2, 2]


def test_each_bin_gets_its_minimum_then_neyman_shares_the_rest_as_worked_by_hand():
    """Bins of 400 and 100 predicted 0.01 and 0.4 on average, 20 items: fair answers 16 and 4, planned shares
    (16 * 0.01 + 2) / 20 = 0.108 and (4 * 0.4 + 2) / 8 = 0.45; 2 each, then 16 by N S: 400 * 0.3104 = 124.2
    and 100 * 0.4975 = 49.7, so 11.4 and 4.6 of 16, rounded by largest remainder to 11 and 5."""
    assert ps.allocate_bins({0: 400, 1: 100}, {0: 0.01, 1: 0.4}, 20, {}) == {0: 13, 1: 7}
    assert ps.allocate_bins({0: 3, 1: 100}, {0: 0.5, 1: 0.1}, 20, {0: 2}) == {0: 1, 1: 19}  # room left: 1
    assert ps.allocate_bins({0: 50, 1: 50, 2: 50}, {0: 0.1, 1: 0.3, 2: 0.6}, 3, {}) == {0: 0, 1: 1, 2: 2}


def test_a_bins_planned_share_weighs_its_mean_prediction_as_its_fair_answers_against_four_at_one_half():
    assert ps.PLAN_PSEUDO_ANSWERS == 4 and ps.PLANNED_FLOOR == 0.02
    assert ps.planned_share(0.0, 36) == pytest.approx(2 / 40)  # (36 * 0 + 2) / (36 + 4)
    assert ps.planned_share(0.25, 6) == pytest.approx(3.5 / 10) and ps.planned_share(1.0, 4) == pytest.approx(6 / 8)
    assert ps.planned_share(0.0, 0) == 0.5  # no answers to weigh: one half
    assert ps.planned_share(0.0, 96) == 0.02 and ps.planned_share(0.0, 95) == pytest.approx(2 / 99)  # the floor
    assert ps.planned_share(1.0, 1000) == 0.98
    assert ps.edge_share(0.0) == pytest.approx(0.5 / 3) and ps.edge_share(0.2) == pytest.approx(0.9 / 3)
    assert ps.edge_share(1.0) == pytest.approx(2.5 / 3)


def test_a_bins_plan_follows_its_prediction_more_the_more_answers_it_will_have():
    """Bins of 425 and 75 items predicted 0.03 and 0.25 on average, 40 items: fair answers 34 and 6, planned
    (34 * 0.03 + 2) / 38 = 0.0795 and (6 * 0.25 + 2) / 10 = 0.35; 2 each, then 36 by N S = 425 * 0.2705 = 114.9
    and 75 * 0.4770 = 35.8: 27.5 and 8.5 of 36, rounded to 27 and 9. Pulled a third of the way whatever the
    budget (`edge_share`, the plan before) the top bin would get 6 of the 36; taken as said, 11. At 400
    items the plan is nearly the predictions' (0.0108 and 0.266): the top bin takes all its 75."""
    assert ps.allocate_bins({0: 425, 1: 75}, {0: 0.03, 1: 0.25}, 40, {}) == {0: 29, 1: 11}
    assert ps.allocate_bins({0: 425, 1: 75}, {0: 0.005, 1: 0.25}, 400, {}) == {0: 325, 1: 75}
    # the answers a bin already has count in its fair answers: 20 new after 20 plan on 40 (0.0795 and 0.35:
    # 2 each, then 16 as 114.9 to 35.8, 12.2 and 3.8: 14 and 6), 20 alone on 20 (0.120 and 0.393: 15 and 5)
    assert ps.allocate_bins({0: 425, 1: 75}, {0: 0.03, 1: 0.25}, 20, {0: 10, 1: 10}) == {0: 14, 1: 6}
    assert ps.allocate_bins({0: 425, 1: 75}, {0: 0.03, 1: 0.25}, 20, {}) == {0: 15, 1: 5}


def test_a_bin_at_an_edge_adds_its_share_of_the_categorys_extra_item_to_the_variance():
    """Bins of 400 and 100 items, 20 decided each, 0 and 5 invalid; edge weights 0.7 and 0.3: the first bin is
    at an edge, so q = (0 + 0.7) / (20 + 1.4); the second is not. Worked by hand against `stratified_variance`."""
    variance, centre = h.stratified_variance(
        np.array([0.0, 5.0]), np.array([20.0, 20.0]), np.array([400.0, 100.0]), np.array([0.7, 0.3])
    )
    q = np.array([0.7 / 21.4, 5 / 20])
    weights = np.array([0.8, 0.2])
    expected = np.sum(weights**2 * (1 - np.array([20 / 400, 20 / 100])) * q * (1 - q) / 19)
    assert variance == pytest.approx(expected) and centre == pytest.approx(weights @ q)
    assert ps.edge_weights([400, 100], [0.05, 0.5]) == pytest.approx([400 * 0.2 / 130, 100 * 0.5 / 130])  # F~ 0.2, 0.5
    plain, _ = h.stratified_variance(np.array([0.0]), np.array([20.0]), np.array([400.0]))
    assert plain == pytest.approx((1 - 20 / 400) * (1 / 22) * (21 / 22) / 19)  # one of each without bins
    # the interval over the bins: Korn and Graubard's on that variance, its effective size at that centre
    from scipy import stats

    share = h.stratified_share([0, 5], [20, 20], [400, 100], pseudo=[0.7, 0.3])
    estimate = 0.2 * 5 / 20
    t_ratio = stats.t.ppf(0.975, 39) / stats.t.ppf(0.975, 38)
    size = weights @ q * (1 - weights @ q) / expected * t_ratio**2
    low, high = stats.beta.ppf(
        [0.025, 0.975], [estimate * size, estimate * size + 1], [size - estimate * size + 1, size - estimate * size]
    )
    assert (share.estimate, share.low, share.high) == pytest.approx((estimate, low, high), rel=1e-9)
    assert share != h.stratified_share([0, 5], [20, 20], [400, 100])  # one whole extra item each: another interval


def test_predictions_that_rank_nothing_leave_each_category_one_bin():
    ranks = ps.ranks_better_than_chance([1, 0, 0, 1, 0, 0, 0, 1], [0.2, 0.9, 0.5, 0.4, 0.1, 0.8, 0.3, 0.6])
    assert not ranks.better and ranks.reason.startswith("AUC 0.40 on 8 decided items")  # 6 of 15 pairs
    from scipy import stats

    expected = stats.mannwhitneyu([0.2, 0.4, 0.6], [0.9, 0.5, 0.1, 0.8, 0.3], alternative="greater")
    assert ranks.reason.endswith(f"p = {expected.pvalue:.3f}")
    unjudged = ps.ranks_better_than_chance([0, 0, 0], [0.1, 0.5, 0.9])
    assert unjudged.better and "no decided item is invalid yet" in unjudged.reason


def test_a_useless_predictor_after_answers_draws_one_bin_per_category(demo_db, tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"id": row["id"], "invalid": float(rng.random())} for row in frame_items(demo_db)]
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "noise.jsonl", rows), "noise")
    health.create_sample_batch(demo_db, health.plan_sample(demo_db, DATASET, 70), ANNOTATORS, overlap=3, name="h1")
    simulate(demo_db, "h1", accuracies=1.0, seed=0)
    plan = health.plan_sample(demo_db, DATASET, 30, allocation="neyman", strategy="predicted", predictions="noise")
    assert plan.bins is not None and all(b["cuts"] == [] for b in plan.bins.values())
    assert all("AUC" in b["ranking"] for b in plan.bins.values())


def predicted_batch(db, budget: int = 60, seed: int = 2, name: str = "health-2", predictions: str = "judge") -> dict:
    plan = health.plan_sample(
        db, DATASET, budget, allocation="neyman", strategy="predicted", predictions=predictions, seed=seed
    )
    return health.create_sample_batch(db, plan, ANNOTATORS, overlap=3, name=name)


def test_a_draw_by_prediction_records_its_bins_and_draws_within_them(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    created = predicted_batch(demo_db)
    design = health.batch_design(demo_db, "health-2")
    assert (design["strategy"], design["predictions"]) == ("predicted", "judge")
    predictions = store.get_predictions(demo_db, DATASET, "judge")
    frame = health.sampling_frame(demo_db, DATASET)
    first = set(health.batch_design(demo_db, "health-1")["items"])
    assert not first & set(design["items"]) and created["drawn"] == len(design["items"]) == 60
    for category, items in frame.items():
        bins = design["bins"][category]
        values = np.array([predictions[i] for i in items])
        most = min(ps.MAX_BINS, design["strata"][category]["drawn"] // ps.MIN_PER_BIN)  # each bin its two now
        assert bins["cuts"] == ps.cut_points(values, max(most, 1)) and sum(bins["sizes"]) == len(items)
        which = ps.bin_of(values, bins["cuts"])
        assert bins["means"] == [pytest.approx(values[which == b].mean(), abs=1e-6) for b in range(len(bins["sizes"]))]
        assert bins["ranking"] == "AUC 1.00 on 70 decided items, one-sided p = 0.000"
        new = [predictions[int(i)] for i, entry in design["items"].items() if entry["category"] == category]
        counted = np.bincount(ps.bin_of(np.array(new), bins["cuts"]), minlength=len(bins["sizes"])).tolist()
        assert design["per_bin"][category] == counted  # what each bin gave this draw, as recorded
    assert any(len(b["sizes"]) > 1 for b in design["bins"].values())
    assert design["plan"] == {"rule": "neyman", "pseudo_answers": ps.PLAN_PSEUDO_ANSWERS, "floor": ps.PLANNED_FLOOR}
    sample = health.read_sample(demo_db, DATASET)
    for item, entry in design["items"].items():
        category, number = entry["category"], sample.bins[int(item)]
        assert number == ps.bin_of([predictions[int(item)]], design["bins"][category]["cuts"])[0]
        in_bin = [i for i in frame[category] if sample.bins[i] == number]
        drawn = sum(i in sample.drawn for i in in_bin)  # both batches: the sample as it stands after the draw
        assert entry["inclusion"] == pytest.approx(drawn / len(in_bin), abs=1e-9)


def test_a_later_draw_keeps_the_first_bins_and_refuses_other_predictions(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    predicted_batch(demo_db)
    simulate(demo_db, "health-2", accuracies=1.0, seed=0)
    health.import_predictions(
        demo_db, DATASET, write_jsonl(tmp_path / "o.jsonl", probability_rows(demo_db, 5)), "other"
    )
    kept = (
        "batch health-2 cut this sample's bins on the predictions 'judge': every later draw by prediction keeps "
        "them (--predictions judge)"
    )
    with pytest.raises(health.HealthError, match=f"^{re.escape(kept)}$"):
        predicted_batch(demo_db, 20, name="health-3", predictions="other")
    predicted_batch(demo_db, 20, name="health-3")
    assert health.batch_design(demo_db, "health-3")["bins"] == health.batch_design(demo_db, "health-2")["bins"]


def test_the_report_takes_the_bins_as_strata_pinned_to_an_independent_stratified_computation(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    predicted_batch(demo_db)
    simulate(demo_db, "health-2", accuracies=1.0, seed=0)
    report = health.health_report(demo_db, DATASET, predictions="judge")
    assert report["estimator"] == "binned" and report["waiting"] is None
    bins = health.batch_design(demo_db, "health-2")["bins"]
    predictions = store.get_predictions(demo_db, DATASET, "judge")
    truth = {row["id"]: row["invalid"] for row in frame_items(demo_db)}
    outcomes = health.item_verdicts(demo_db, DATASET)
    frame = health.sampling_frame(demo_db, DATASET)
    x, n, size, pseudo = [], [], [], []  # every bin of every category, from the design and the outcomes
    for category, items in frame.items():
        values = np.array([predictions[i] for i in items])
        which = ps.bin_of(values, bins[category]["cuts"])
        per_bin, weights = [], []
        for b in range(len(bins[category]["sizes"])):
            members = [i for i, w in zip(items, which, strict=True) if w == b]
            decided = [i for i in members if i in outcomes]
            per_bin.append((sum(outcomes[i] == "invalid" for i in decided), len(decided), len(members)))
            weights.append(len(members) * (2 * values[which == b].mean() + 0.5) / 3)  # N_h F~_h
        weights = [w / sum(weights) for w in weights]
        x, n, size, pseudo = (
            x + [p[0] for p in per_bin],
            n + [p[1] for p in per_bin],
            size + [p[2] for p in per_bin],
            pseudo + weights,
        )
        row = next(r for r in report["strata"] if r["category"] == category)
        if len(per_bin) > 1:
            expected = h.stratified_share(*zip(*per_bin, strict=True), pseudo=weights).as_dict()
        else:
            expected = h.stratum_share(*per_bin[0]).as_dict()
        assert row["invalid_share"] == expected
    assert report["overall"]["invalid_share"] == h.stratified_share(x, n, size, pseudo=pseudo).as_dict()
    overall = report["overall"]["invalid_share"]
    assert overall["interval"][0] <= np.mean(list(truth.values())) <= overall["interval"][1]
    assert "drew by prediction, on the predictions judge" in report["methods"]
    assert "prediction bins as strata" in report["methods"]
    assert report["leaderboard"] is not None and "undefined" not in report["leaderboard"]
    markdown = health.report_markdown(report)
    for word in ("nan", "None", "inf"):
        assert f" {word} " not in markdown and f"| {word}" not in markdown


def test_a_batch_by_prediction_nobody_answered_changes_nothing_and_a_half_answered_one_waits(demo_db, tmp_path):
    """A first random batch of 21 (three per category) leaves bins with no decided item: a batch by prediction
    changes nothing until answered, and while a bin of it still has no decided item, the estimates stand on
    the random batch alone and say so."""
    health.import_predictions(
        demo_db, DATASET, write_jsonl(tmp_path / "judge.jsonl", probability_rows(demo_db)), "judge"
    )
    health.create_sample_batch(
        demo_db, health.plan_sample(demo_db, DATASET, 21), ANNOTATORS, overlap=3, name="health-1"
    )
    simulate(demo_db, "health-1", accuracies=1.0, seed=0)
    before = health.health_report(demo_db, DATASET, predictions="judge")
    predicted_batch(demo_db)
    assert any(len(b["sizes"]) > 1 for b in health.batch_design(demo_db, "health-2")["bins"].values())
    after = health.health_report(demo_db, DATASET, predictions="judge")
    shares = ("invalid_share", "ambiguous_share", "invalid_or_ambiguous_share")
    assert [after["overall"][k] for k in shares] == [before["overall"][k] for k in shares]
    assert after["prediction_powered"] == before["prediction_powered"]
    assert after["estimator"] == "stratified" and after["waiting"] is None
    one = int(next(iter(health.batch_design(demo_db, "health-2")["items"])))
    store.decide(demo_db, store.get_batch(demo_db, "health-2")["id"], one, 0, {"answer": "negative_false"}, by="admin")
    half = health.health_report(demo_db, DATASET, predictions="judge")
    assert "enter the estimates once every prediction bin of a category with a decided item has one" in half["waiting"]
    assert [half["overall"][k] for k in shares] == [before["overall"][k] for k in shares]
    assert "The estimates stand on the batches drawn before" in half["methods"]
    simulate(demo_db, "health-2", accuracies=1.0, seed=0)
    done = health.health_report(demo_db, DATASET, predictions="judge")
    assert done["estimator"] == "binned" and done["waiting"] is None


def test_predictions_imported_again_since_the_draw_are_refused_naming_the_batch(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    predicted_batch(demo_db)
    flipped = [{**row, "invalid": 1 - row["invalid"]} for row in probability_rows(demo_db)]
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "flipped.jsonl", flipped), "judge")
    with pytest.raises(health.HealthError, match="no longer give the bins batch health-2 drew within"):
        health.health_report(demo_db, DATASET)


def test_a_draw_by_prediction_is_refused_where_it_cannot_be_made(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    draw = dict(allocation="neyman", strategy="predicted")
    needs = (
        "a draw by prediction needs predictions on every item (--predictions NAME): their bins set where the answers "
        f"go; import some with `./foil health predictions {DATASET} FILE --name NAME`"
    )
    with pytest.raises(health.HealthError, match=f"^{re.escape(needs)}$"):
        health.plan_sample(demo_db, DATASET, 40, **draw)
    with pytest.raises(health.HealthError, match="a rank target draws at random"):
        health.plan_sample(demo_db, DATASET, 40, predictions="judge", target="rank", runs=("a", "b"), **draw)
    with pytest.raises(store.NotFoundError, match="nope"):
        health.plan_sample(demo_db, DATASET, 40, predictions="nope", **draw)
    active_batch(demo_db)
    simulate(demo_db, "health-2", accuracies=1.0, seed=0)
    rounds = (
        "this sample has an active batch, estimated round by round; a draw by prediction needs random draws before "
        "it (draw --strategy neyman, or start a sample of another dataset copy)"
    )
    with pytest.raises(health.HealthError, match=f"^{re.escape(rounds)}$"):
        health.plan_sample(demo_db, DATASET, 40, predictions="judge", **draw)


def test_the_command_line_draws_by_prediction(demo_db, tmp_path):
    answered_sample(demo_db, tmp_path)
    db_file = demo_db.conn.execute("PRAGMA database_list").fetchone()[2]
    drawn = run_cli(
        "health", "next", DATASET, "--budget", "40", "--strategy", "predicted", "--predictions", "judge", "--json",
        db=db_file,
    )  # fmt: skip
    assert drawn.returncode == 0, drawn.stderr
    assert json.loads(drawn.stdout)["design"]["strategy"] == "predicted"
    refused = run_cli("health", "next", DATASET, "--budget", "40", "--strategy", "predicted", db=db_file)
    assert refused.returncode != 0 and "needs predictions on every item" in refused.stderr


def test_the_page_draws_by_prediction_and_says_the_bins_are_strata(app, demo_db, tmp_path):
    from tests.conftest import APP_ADMIN

    answered_sample(demo_db, tmp_path)
    at = app(APP_ADMIN)
    at.switch_page("views/health.py").run()
    at.selectbox(key="health_dataset").set_value(DATASET).run()
    at.radio(key="health_strategy").set_value("predicted")
    at.selectbox(key="health_draw_predictions").set_value("judge")
    next(b for b in at.button if b.label == "Draw the next batch").click().run()
    assert not at.exception and not at.error
    batches = health.health_batches(demo_db, DATASET)
    assert health.batch_design(demo_db, batches[-1]["name"])["strategy"] == "predicted"
    simulate(demo_db, batches[-1]["name"], accuracies=1.0, seed=0)
    at.run()
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "drew by prediction" in shown and "bins of the predictions are strata" in shown


def test_a_bin_under_the_smallest_size_merges_into_its_upper_neighbour_or_at_the_top_into_its_lower():
    """20 at 0, 3 at 0.5, 20 at 1: the middle bin of 3 merges upwards (its upper cut dropped); 30 at 0 and 3
    at 1: the top bin merges downwards, leaving one bin; 3 at 0 below 30 and 30: the bottom bin merges up."""
    middle = np.r_[np.zeros(20), np.full(3, 0.5), np.ones(20)]
    assert ps._kept_cuts(middle, [0.01, 0.51]) == [0.01]
    assert ps.cut_points(middle) == [0.01] and np.bincount(ps.bin_of(middle, [0.01])).tolist() == [20, 23]
    assert ps._kept_cuts(np.r_[np.zeros(30), np.ones(3)], [0.5]) == []
    assert ps._kept_cuts(np.r_[np.zeros(3), np.full(30, 0.5), np.ones(30)], [0.25, 0.75]) == [0.75]
    assert ps._kept_cuts(np.r_[np.zeros(5), np.ones(5)], [0.5]) == [0.5]  # 5 items each: kept
    even = np.linspace(0, 1, 40)
    assert ps.cut_points(even, 2) == [pytest.approx(0.49)] and ps.cut_points(even, 1) == []
    assert len(ps.cut_points(even)) == ps.MAX_BINS - 1  # evenly spread: the rule's quarters


def test_the_allocation_over_bins_is_all_of_the_budget_within_each_bins_room():
    rng = np.random.default_rng(7)
    for _ in range(50):
        bins = int(rng.integers(1, 5))
        sizes = {b: int(rng.integers(1, 60)) for b in range(bins)}
        taken = {b: int(rng.integers(0, sizes[b] + 1)) for b in range(bins)}
        means = {b: float(rng.uniform(0.01, 0.9)) for b in range(bins)}
        room = sum(sizes[b] - taken[b] for b in sizes)
        budget = int(rng.integers(0, room + 1))
        found = ps.allocate_bins(sizes, means, budget, taken)
        assert sum(found.values()) == budget and all(0 <= found[b] <= sizes[b] - taken[b] for b in sizes)
        if budget >= ps.MIN_PER_BIN * bins:
            assert all(found[b] >= min(ps.MIN_PER_BIN, sizes[b] - taken[b]) for b in sizes)


def test_an_empty_top_bin_is_merged_into_the_one_below():
    """A cut with no prediction above it leaves the top bin empty: its cut goes, the others stay."""
    from foil_studio.analysis.prediction_strata import SMALLEST_BIN, _kept_cuts

    low = np.linspace(0.0, 0.29, SMALLEST_BIN + 5)
    middle = np.linspace(0.3, 0.59, SMALLEST_BIN + 5)
    assert _kept_cuts(np.concatenate([low, middle]), [0.3, 0.6]) == [0.3]
    assert _kept_cuts(np.concatenate([low, middle, middle + 0.4]), [0.3, 0.6]) == [0.3, 0.6]


def test_edge_weights_refuse_sizes_and_means_of_different_lengths():
    from foil_studio.analysis.prediction_strata import edge_weights

    with pytest.raises(ValueError):
        edge_weights([425, 75], [0.1])


def test_cut_points_follow_the_cumulative_square_root_rule_and_one_bin_is_no_cut():
    """Dalenius and Hodges by hand: 60 items at 0, 30 at 0.5, 10 at 1 in `CLASSES` classes; the
    running sum of the square-root counts reaches a third and two thirds of its total in the class
    of 0 and the class of 0.5: the cuts are those classes' upper edges. One bin asked, or one
    prediction, is no cut."""
    from foil_studio.analysis.prediction_strata import CLASSES, cut_points

    predicted = np.r_[np.zeros(60), np.full(30, 0.5), np.ones(10)]
    counts, edges = np.histogram(predicted, bins=CLASSES, range=(0.0, 1.0))
    running = np.cumsum(np.sqrt(counts))
    by_hand = sorted({float(edges[np.searchsorted(running, running[-1] * k / 3) + 1]) for k in (1, 2)})
    assert cut_points(predicted, bins=3) == by_hand == pytest.approx([1 / CLASSES, 0.5 + 1 / CLASSES])
    assert cut_points(predicted, bins=1) == [] and cut_points(np.array([0.2]), bins=3) == []
    # the heaviest class last: a third of 14.07 falls in the class of 0.5, two thirds in the last, whose
    # cut (f's maximum) leaves the bin between empty, so it goes; a total read one class short would
    # put the cuts at 0.01 and 0.51
    assert cut_points(np.r_[np.zeros(10), np.full(10, 0.5), np.ones(60)], bins=3) == [0.51]


def test_bins_get_two_items_each_then_neymans_share_of_the_rest():
    """400 items predicted at 1% and 100 at 40%, 20 answers: planned 0.108 and 0.45 (above), 2 each, then 16
    by N_h sqrt(p_h (1 - p_h)): 124.2 and 49.7, i.e. 11.4 and 4.6 of 16, rounded to 11 and 5."""
    from foil_studio.analysis.prediction_strata import allocate_bins

    assert allocate_bins({0: 400, 1: 100}, {0: 0.01, 1: 0.4}, 20, {}) == {0: 13, 1: 7}
    assert allocate_bins({0: 400, 1: 100}, {0: 0.01, 1: 0.4}, 3, {}) == {0: 1, 1: 2}  # the likelier bin first
    assert allocate_bins({0: 400, 1: 3}, {0: 0.01, 1: 0.4}, 10, {1: 2}) == {0: 9, 1: 1}  # one item left there
    # 100 and 100 predicted at 1% and 90%, fair answers 10 each: planned 2.1 / 14 = 0.15 and 11 / 14 = 0.786,
    # 16 by 35.7 and 41.0 (sqrt(p (1 - p)), not sqrt(p (2 - p)), which gives 6 and 10): 7 and 9
    assert allocate_bins({0: 100, 1: 100}, {0: 0.01, 1: 0.9}, 20, {}) == {0: 9, 1: 11}
    assert allocate_bins({0: 2, 1: 100}, {0: 0.5, 1: 0.1}, 10, {}) == {0: 2, 1: 8}  # a bin of two gives both


def test_ranking_with_one_outcome_only_is_not_judged_and_says_which_is_missing():
    from foil_studio.analysis.prediction_strata import ranks_better_than_chance

    assert ranks_better_than_chance([0, 0, 0], [0.1, 0.5, 0.9]).reason == "no decided item is invalid yet: not judged"
    assert ranks_better_than_chance([1, 1], [0.1, 0.5]).reason == "no decided item is valid yet: not judged"
    judged = ranks_better_than_chance([1, 1, 1, 0], [0.9, 0.8, 0.7, 0.1])
    assert judged.reason.startswith("AUC 1.00 on 4 decided items")


def test_no_predictions_give_one_bin():
    assert ps.cut_points([]) == [] and ps.cut_points(np.array([])) == []


def test_a_bin_one_item_over_its_minimum_gets_that_item_from_neymans_share():
    """3 and 100 items, both predicted (and so planned) at 50%, 40 answers: 2 each first, then 36 by N_h S_h (1.5 and
    50): the small bin's share, 1.05, takes its last undrawn item; the rest goes to the other."""
    assert ps.allocate_bins({0: 3, 1: 100}, {0: 0.5, 1: 0.5}, 40, {}) == {0: 3, 1: 37}


def test_a_p_value_at_the_level_ranks_better_than_chance():
    """One invalid item predicted above 19 valid ones: Mann-Whitney's exact one-sided p-value is
    1/20, the 5% level itself, which a test at 5% rejects (p <= level)."""
    from scipy import stats

    predicted = [0.9, *np.linspace(0.0, 0.5, 19)]
    assert stats.mannwhitneyu([0.9], predicted[1:], alternative="greater").pvalue == 0.05
    assert ps.ranks_better_than_chance([1] + [0] * 19, predicted).better
    assert not ps.ranks_better_than_chance([1] + [0] * 19, predicted, level=0.049).better

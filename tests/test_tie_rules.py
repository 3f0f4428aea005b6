"""Every tie rule on every metric family, with an oracle that does not repeat the code: an item
without a tied comparison scores the same under all three rules; an item with exactly one tied
comparison scores, under ``half``, the mean of its ``wrong`` and ``right`` scores (a fair coin on
that one comparison), and never outside them; ``right`` never scores below ``wrong``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foil_studio.analysis import metric_families, results
from foil_studio.analysis import metrics as m
from foil_studio.data import store

# (family, item kind, shape of one item's scores): values from a small set, so that ties are common
SHAPES = {
    "pairwise": ("pair", (2,)),
    "hard_positive": ("triple", (3,)),
    "paraphrase": ("paraphrase", (6,)),
    "bivlc": ("group", (2, 2)),
    "retrieval": ("retrieval", (4,)),
}
LEVELS = [0.1, 0.2, 0.3, 0.4]


def run_of(kind: str, scores: np.ndarray) -> store.RunColumns:
    n = len(scores)
    return store.RunColumns(
        "scores", np.arange(n), np.array([kind] * n), np.array(["c"] * n), scores.astype(float), [None] * n, [None] * n
    )


@pytest.mark.parametrize("family", sorted(SHAPES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_ties_move_each_item_exactly_as_the_rule_table_says(family, data):
    kind, shape = SHAPES[family]
    n = data.draw(st.integers(1, 12))
    values = data.draw(
        st.lists(st.sampled_from(LEVELS), min_size=n * int(np.prod(shape)), max_size=n * int(np.prod(shape)))
    )
    run = run_of(kind, np.array(values).reshape((n, *shape)))
    outcomes = metric_families.METRIC_FAMILIES[family].outcomes
    wrong, tied = outcomes(run, "wrong")
    right, _ = outcomes(run, "right")
    half, _ = outcomes(run, "half")
    for key in wrong:
        w, r, h = (np.asarray(o[key], dtype=float) for o in (wrong, right, half))
        free = tied == 0
        assert np.array_equal(w[free], r[free]) and np.array_equal(w[free], h[free]), (family, key)
        assert (w <= h + 1e-12).all() and (h <= r + 1e-12).all(), (family, key)
        one = tied == 1
        assert np.allclose(h[one], (w[one] + r[one]) / 2), (family, key, run.scores[one])


@pytest.mark.parametrize("family", sorted(SHAPES))
def test_a_tie_is_counted_where_scores_are_equal(family):
    kind, shape = SHAPES[family]
    distinct = np.linspace(0.9, 0.1, int(np.prod(shape))).reshape(shape)
    flat = np.full(shape, 0.5)
    _, tied = metric_families.METRIC_FAMILIES[family].outcomes(run_of(kind, np.stack([distinct, flat])), "wrong")
    assert tied[0] == 0 and tied[1] >= 1


# Per family, which side of each comparison the true caption (image) is on: +1 where a higher
# score favours the right answer, -1 where it favours the wrong one.
FAVOURS = {
    "pairwise": [1, -1],
    "hard_positive": [1, -1, 1],  # s(c) > s(c_n), s(c_p) > s(c_n)
    "paraphrase": [1, -1, 1, 1, -1, -1],  # image: p1, p2 over n; text: cos(p1,p2) over cos(p,n)
    "bivlc": [[1, -1], [-1, 1]],  # scores[:, i, c]: each image with its own caption
    "retrieval": [1, -1, -1, -1],
}
STRICT = {"brittleness"}  # not an accuracy: its comparisons stay strict whatever the rule


@pytest.mark.parametrize("family", sorted(SHAPES))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_right_scores_every_tie_as_won_and_wrong_as_lost_on_every_comparison(family, data):
    """The oracle is the scores themselves: `right` must score an item as if each tied score had
    been nudged towards the true answer, `wrong` as if nudged against it (a nudge far smaller
    than the gaps between distinct scores, so it breaks ties and moves nothing else). A family
    that ignored the rule on one of its comparisons fails here where the property above cannot see it."""
    kind, shape = SHAPES[family]
    n = data.draw(st.integers(1, 12))
    values = data.draw(
        st.lists(st.sampled_from(LEVELS), min_size=n * int(np.prod(shape)), max_size=n * int(np.prod(shape)))
    )
    scores = np.array(values).reshape((n, *shape))
    nudge = 0.01 * np.asarray(FAVOURS[family], dtype=float)
    outcomes = metric_families.METRIC_FAMILIES[family].outcomes
    right, _ = outcomes(run_of(kind, scores), "right")
    wrong, _ = outcomes(run_of(kind, scores), "wrong")
    won, untied = outcomes(run_of(kind, scores + nudge), "wrong")
    lost, _ = outcomes(run_of(kind, scores - nudge), "right")
    assert not untied.any()  # the nudged scores have no tie left: the rule no longer matters
    for key in set(right) - STRICT:
        assert np.array_equal(right[key], won[key]), (family, key, scores)
        assert np.array_equal(wrong[key], lost[key]), (family, key, scores)


def test_the_parity_report_decides_under_the_benchmarks_tie_rule(fresh_db, tmp_path):
    """What'sUp counts a tie as right, under run A as under run B: a move from a wrong margin to
    an exact tie flips an item to right, and a tie under A that becomes a clear win is listed (its
    gap changed sign) as right under both; computed through `parity` itself."""
    from foil_studio.analysis.parity import parity
    from foil_studio.data import formats
    from foil_studio.data.loading import import_path

    import_path(fresh_db, "whatsup", formats.REGISTRY["whatsup"].write_source(tmp_path), name="spatial")
    dataset = store.get_dataset(fresh_db, "spatial")
    items = store.list_items(fresh_db, dataset["id"], limit=1000)
    first, second = items[0]["id"], items[1]["id"]
    credits = {"a": [], "b": []}
    for run in ("a", "b"):
        run_id = store.ensure_run(fresh_db, dataset["id"], run, run_type="scores")
        rows = []
        for item in items:
            scores = [0.2, 0.3] + [0.1] * (len(item["captions"]) - 2)  # wrong by a margin
            if run == "b" and item["id"] == first:
                scores[0] = 0.3  # now tied with the best negative
            if item["id"] == second:
                scores[0] = 0.3 if run == "a" else 0.5  # tied under A, a clear win under B
            rows.append((item["id"], scores))
            credits[run].append(float(scores[0] >= max(scores[1:])))  # What'sUp: a tie is right
        with store.transaction(fresh_db):
            store.put_scores(fresh_db, run_id, rows)
    report = parity(fresh_db, "spatial", "a", "b", n_boot=50, seed=7)
    assert (report.dataset, report.run_a, report.run_b, report.n_items) == ("spatial", "a", "b", len(items))
    flips = report.flips.set_index("item")
    assert report.flips["item"].tolist() == [second, first]  # smallest margin under A first: the tie
    assert (bool(flips.loc[first, "correct A"]), bool(flips.loc[first, "correct B"])) == (False, True)
    assert (bool(flips.loc[second, "correct A"]), bool(flips.loc[second, "correct B"])) == (True, True)
    assert (report.metric, report.value_a, report.value_b) == (
        "individual_accuracy",
        100 / len(items),
        200 / len(items),
    )
    paired = np.array(credits["b"]) - np.array(credits["a"])
    assert report.change_interval == m.share_interval(paired, n_boot=50, seed=7)


@pytest.mark.parametrize("ties", ["wrong", "right"])
def test_the_parity_flip_table_follows_the_benchmarks_tie_rule_and_sees_a_move_to_an_exact_tie(ties):
    from foil_studio.analysis.inspection import run_table
    from foil_studio.analysis.parity import decision_flips

    a = run_of("pair", np.array([[0.2, 0.3], [0.3, 0.3], [0.4, 0.1]]))  # wrong by a margin; tied; right
    b = run_of("pair", np.array([[0.3, 0.3], [0.3, 0.3], [0.4, 0.1]]))  # the first moves to an exact tie
    flips = decision_flips(run_table(a, ties), run_table(b, ties))
    assert flips["item"].tolist() == [0]  # the move to a tie is a flip; a tie that stays one is not
    assert bool(flips["correct B"].iloc[0]) == (ties == "right")  # a tie counts as the benchmark counts it
    assert not bool(flips["correct A"].iloc[0])


def test_a_parity_report_as_plain_data_holds_its_figures_the_change_and_every_flip():
    from foil_studio.analysis.inspection import run_table
    from foil_studio.analysis.parity import Parity, decision_flips

    a = run_of("pair", np.array([[0.2, 0.3], [0.6, 0.3], [0.4, 0.1]]))
    b = run_of("pair", np.array([[0.3, 0.2], [0.1, 0.3], [0.4, 0.1]]))
    flips = decision_flips(run_table(a, "wrong"), run_table(b, "wrong"))
    report = Parity("demo-set", "fp32", "bf16", 3, "accuracy", 66.0, 62.5, (-20.0, 12.5), flips)
    assert report.to_dict() == {
        "dataset": "demo-set",
        "run_a": "fp32",
        "run_b": "bf16",
        "n_items": 3,
        "metric": "accuracy",
        "value_a": 66.0,
        "value_b": 62.5,
        "change": -3.5,
        "change_interval": [-20.0, 12.5],
        "n_flips": 2,
        "flips": flips.to_dict("records"),
    }
    assert [row["item"] for row in report.to_dict()["flips"]] == [0, 1]  # smallest margin under A first


def test_whatsup_pairs_and_sets_take_the_product_of_half_credits():
    """What'sUp's pair (set) accuracy under `half`: the chance that every item of the pair (set) is
    right when each tie is a fair coin, the product of the items' credits; checked on half credits,
    where a product, a minimum and a mean differ."""
    from foil_studio.data import formats

    # a set of four retrieval items in two pairs: right; tied once (half); tied once (half); wrong
    scores = np.array([[0.9, 0.1, 0.1, 0.1], [0.5, 0.5, 0.1, 0.1], [0.5, 0.5, 0.1, 0.1], [0.1, 0.9, 0.1, 0.1]])
    groups = [
        {"pair": "p1", "set": "s"},
        {"pair": "p1", "set": "s"},
        {"pair": "p2", "set": "s"},
        {"pair": "p2", "set": "s"},
    ]
    run = run_of_set(scores, groups)
    whatsup = formats.REGISTRY["whatsup"]
    summary = results.summarize_run(run, results.Settings(whatsup, "half", n_boot=10, seed=3))
    half = summary["metrics"]
    assert half["individual_accuracy"] == pytest.approx(100 * (1 + 0.5 + 0.5 + 0) / 4)
    assert half["pair_accuracy"] == pytest.approx(100 * (1 * 0.5 + 0.5 * 0) / 2)  # product per pair: 0.5 and 0
    assert half["set_accuracy"] == pytest.approx(0.0)  # the wrong item makes the set wrong
    # each group's interval resamples its groups' credits, with the settings' resamples and seed
    assert summary["intervals"]["pair_accuracy"] == m.share_interval(np.array([0.5, 0.0]), n_boot=10, seed=3)
    assert summary["intervals"]["set_accuracy"] == m.share_interval(np.array([0.0]), n_boot=10, seed=3)
    right = results.summarize_run(run, results.Settings(whatsup, "right", n_boot=10))["metrics"]
    assert right["pair_accuracy"] == pytest.approx(50.0) and right["individual_accuracy"] == pytest.approx(75.0)
    three = results.summarize_run(run_of_set(scores[:3], groups[:3]), results.Settings(whatsup, "half", n_boot=10))[
        "metrics"
    ]
    assert three["set_accuracy"] == pytest.approx(100 * 1 * 0.5 * 0.5)


def run_of_set(scores: np.ndarray, groups: list[dict]) -> store.RunColumns:
    n = len(scores)
    return store.RunColumns(
        "scores", np.arange(n), np.array(["retrieval"] * n), np.array(["controlled_a"] * n), scores, [None] * n, groups
    )


def test_the_parity_report_of_a_named_subset_reads_only_its_items_under_both_runs(fresh_db, fixtures):
    """VALSE's `valid` subset: a flip outside the subset is not reported, nor counted in either
    run's headline (both runs are read through the subset)."""
    from foil_studio.analysis.parity import parity
    from foil_studio.data.loading import import_path

    import_path(fresh_db, "valse", fixtures / "valse" / "data" / "existence.json", name="valse")
    dataset = store.get_dataset(fresh_db, "valse")
    items = store.list_items(fresh_db, dataset["id"], limit=10_000)
    valid = [item["id"] for item in items if item["truth"].get("valid_foil") is True]
    invalid = [item["id"] for item in items if item["truth"].get("valid_foil") is not True]
    assert valid and invalid
    for run in ("a", "b"):
        run_id = store.ensure_run(fresh_db, dataset["id"], run, run_type="scores")
        flipped = {valid[0], invalid[0]} if run == "b" else set()
        with store.transaction(fresh_db):
            store.put_scores(
                fresh_db, run_id, [(i, [0.2, 0.3] if i in flipped else [0.3, 0.2]) for i in valid + invalid]
            )
    report = parity(fresh_db, "valse", "a", "b", subset="valid", n_boot=50)
    assert report.n_items == len(valid) and report.flips["item"].tolist() == [valid[0]]
    assert (report.value_a, report.value_b) == (100.0, pytest.approx(100 * (len(valid) - 1) / len(valid)))
    everything = parity(fresh_db, "valse", "a", "b", n_boot=50)
    assert everything.n_items == len(items) and sorted(everything.flips["item"]) == sorted([valid[0], invalid[0]])

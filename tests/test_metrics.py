"""Metrics: published tables from the real per-instance files, hand-computed cases, invariants."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foil_studio.analysis import metric_families
from foil_studio.analysis import metrics as m
from foil_studio.analysis.metric_families import base as family_base
from foil_studio.analysis.metric_families import choices, hard_positive, pairwise
from foil_studio.analysis.results import run_metrics
from foil_studio.data.loading import import_path
from tests.conftest import FOIL_CLI, REPO

# SugarCrepe paper, Table 6, OpenAI ViT-B-32; "Average" is the macro mean over categories.
SUGARCREPE_VIT_B_32 = {
    "replace_obj": 90.92,
    "replace_att": 80.08,
    "replace_rel": 69.20,
    "swap_obj": 61.38,
    "swap_att": 63.96,
    "add_obj": 77.21,
    "add_att": 68.79,
}
# BiVLC paper, Tables 3 and 6, CLIP (ViT-B-32); BiVLC quotes SugarCrepe as the micro average.
BIVLC_VIT_B_32 = {
    "i2t": 75.83,
    "t2i": 52.40,
    "group": 49.06,
    "ipos2t": 84.32,
    "ineg2t": 89.50,
    "tpos2i": 69.21,
    "tneg2i": 82.82,
}
BIVLC_BY_TYPE = {
    "replace": (82.09, 60.36, 57.27),
    "swap": (46.52, 16.16, 13.65),
    "add": (70.32, 44.63, 39.58),
}
# SugarCrepe paper, Table 6, GPT-4V: the mean over both caption orderings of the authors' judgement.
GPT4V = {
    "replace_obj": 96.31,
    "replace_att": 93.53,
    "replace_rel": 90.26,
    "swap_obj": 83.13,
    "swap_att": 90.09,
    "add_obj": 91.59,
    "add_att": 91.76,
}


def test_sugarcrepe_table_from_bivlc_per_instance_file(fresh_db, fixtures):
    import_path(fresh_db, "sugarcrepe-correct", fixtures / "bivlc" / "results" / "SUGARCREPE_CORRECT_ViT-B-32.csv")
    result = run_metrics(fresh_db, "sugarcrepe", "ViT-B-32", n_boot=50)
    assert {c: round(v["accuracy_micro"], 2) for c, v in result["by_category"].items()} == SUGARCREPE_VIT_B_32
    assert round(result["metrics"]["accuracy_macro"], 2) == 73.08  # SugarCrepe's "Average"
    assert round(result["metrics"]["accuracy_micro"], 2) == 76.56  # BiVLC's "SugarCrepe" column
    low, high = result["intervals"]["accuracy_micro"]
    assert low < 76.56 < high and high - low < 3
    low, high = result["category_intervals"]["swap_obj"]["accuracy_micro"]  # 246 items: a wider interval
    assert low < 61.38 < high and high - low > 6


def test_bivlc_table_from_per_instance_file(fresh_db, fixtures):
    import_path(fresh_db, "bivlc-results", fixtures / "bivlc" / "results" / "BiVLC_ViT-B-32.csv")
    result = run_metrics(fresh_db, "bivlc", "ViT-B-32", n_boot=50)
    assert {k: round(v, 2) for k, v in result["metrics"].items()} == BIVLC_VIT_B_32
    for type_, expected in BIVLC_BY_TYPE.items():
        row = result["by_type"][type_]
        assert tuple(round(row[k], 2) for k in ("i2t", "t2i", "group")) == expected
    assert result["by_category"]["swap_obj"]["n"] == 81


def test_a_group_benchmark_with_underscores_in_its_categories_is_not_taken_for_bivlc(fresh_db, tmp_path):
    """Types come from a format's declaration (`Format.category_types`: BiVLC's), never from a `_`
    in a category's name: a new group benchmark keeps its own categories and no BiVLC types."""
    from foil_studio.cli import metrics_text
    from foil_studio.data import formats, store

    path = tmp_path / "eqben.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "kind": "group",
                    "category": "spatial_left" if n % 2 else "count_two",
                    "id": str(n),
                    "captions": [f"a cup {n} left of a bowl", f"a bowl {n} left of a cup"],
                    "images": [f"{n}a.jpg", f"{n}b.jpg"],
                }
            )
            + "\n"
            for n in range(20)
        )
    )
    import_path(fresh_db, "jsonl", path)
    dataset_id = store.get_dataset(fresh_db, "eqben")["id"]
    ids = [i["id"] for i in store.list_items(fresh_db, dataset_id, limit=100)]
    with store.transaction(fresh_db):
        run_id = store.ensure_run(fresh_db, dataset_id, "model", run_type="scores", model="m")
        right, wrong = [[0.3, 0.1], [0.1, 0.3]], [[0.1, 0.3], [0.3, 0.1]]
        store.put_scores(fresh_db, run_id, [(i, right if n % 4 else wrong) for n, i in enumerate(ids)])
    result = run_metrics(fresh_db, "eqben", "model", n_boot=20)
    assert "by_type" not in result and "type_intervals" not in result
    assert set(result["by_category"]) == {"spatial_left", "count_two"} and result["metrics"]["group"] == 75.0
    assert "| per " not in metrics_text(result) and "type" not in metrics_text(result).split("\n", 3)[-1]
    categories = np.array(["spatial_left", "count_two"])
    assert family_base.category_types(categories, formats.REGISTRY["jsonl"]) is None
    declared = family_base.category_types(categories, formats.REGISTRY["bivlc"])  # BiVLC declares its types
    assert declared is not None and declared.tolist() == ["spatial", "count"]


def test_gpt4v_per_category_from_answer_files(fresh_db, fixtures):
    import_path(fresh_db, "gpt4v", fixtures / "sugarcrepe" / "gpt4v")
    result = run_metrics(fresh_db, "sugarcrepe", "gpt4v", n_boot=20)
    assert {c: round(v["accuracy_reported"], 2) for c, v in result["by_category"].items()} == GPT4V
    assert result["by_category"]["swap_obj"]["n"] == 246
    # Our reading of the free-form answers counts "Neither..." as wrong; it costs under 0.3 points.
    assert 0 < result["metrics"]["accuracy_reported"] - result["metrics"]["accuracy"] < 0.3
    orderings = result["by_ordering"]
    assert orderings["negative-first"]["accuracy"] - orderings["positive-first"]["accuracy"] > 2  # position bias
    assert result["metrics"]["n_unparsed"] == sum(o["n_unparsed"] for o in orderings.values()) > 0


def test_metrics_cli_prints_the_contract(tmp_path, fixtures):
    db = tmp_path / "f.db"
    path = fixtures / "bivlc" / "results" / "BiVLC_ViT-B-32.csv"
    for args in (
        ["import", "bivlc-results", str(path)],
        ["metrics", "bivlc", "--run", "ViT-B-32", "--json", "--bootstrap", "20"],
    ):
        done = subprocess.run(
            [*FOIL_CLI, *args, "--db", str(db)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {"dataset", "run", "n", "metrics", "by_category", "intervals"} <= set(result)
    assert (
        round(result["metrics"]["group"], 2) == 49.06
        and "replace" in result["by_type"]
        and "replace_obj" in result["by_category"]
    )
    assert "replace" not in result["by_category"]  # types and subtypes are never one axis


# --- hand-computed cases ----------------------------------------------------------------------


def test_ties_are_failures_by_default_and_counted():
    assert m.credit([1.0, 0.5, 0.2], [0.5, 0.5, 0.3]).tolist() == [1.0, 0.0, 0.0]
    assert m.tied([1.0, 0.5, 0.2], [0.5, 0.5, 0.3]).tolist() == [0, 1, 0]


@pytest.mark.parametrize(("rule", "worth"), [("wrong", 0.0), ("right", 1.0), ("half", 0.5)])
def test_a_tie_is_worth_what_the_rule_says_and_nothing_else_moves(rule, worth):
    assert m.credit([1.0, 0.5, 0.2], [0.5, 0.5, 0.3], rule).tolist() == [1.0, worth, 0.0]


def test_an_unknown_tie_rule_is_refused_by_name():
    with pytest.raises(ValueError, match="wrong.*right.*half"):
        m.credit([1.0], [1.0], "coin")


def test_half_counted_ties_multiply_through_compound_scores():
    # one BiVLC item whose Ineg2T comparison ties (s(C0,I1) = s(C1,I1)) and every other one is right
    s = np.array([[[0.9, 0.1], [0.8, 0.8]]])
    outcomes = {k: float(v[0]) for k, v in m.bivlc_outcomes(s, "half").items()}
    assert outcomes["ineg2t"] == 0.5 and outcomes["i2t"] == 0.5 and outcomes["group"] == 0.5 and outcomes["t2i"] == 1.0
    assert m.bivlc_outcomes(s, "right")["group"].tolist() == [1.0] and m.bivlc_outcomes(s, "wrong")[
        "group"
    ].tolist() == [0.0]


def test_recall_with_ties_ranks_the_positive_last_first_or_at_random():
    scores = [[0.5, 0.5, 0.5, 0.2]]  # two negatives tie the positive
    assert [m.recall_at_k(scores, 1, rule).tolist() for rule in ("wrong", "right", "half")] == [
        [0.0],
        [1.0],
        [pytest.approx(1 / 3)],
    ]
    assert m.recall_at_k(scores, 3, "wrong").tolist() == [1.0] and m.recall_at_k(scores, 2, "half").tolist() == [
        pytest.approx(2 / 3)
    ]


def test_half_credit_intervals_resample_the_credits_themselves():
    credits = np.array([1.0] * 50 + [0.5] * 30 + [0.0] * 20)
    low, high = m.share_interval(credits, n_boot=4000, seed=3)
    assert low < m.percent(credits) == 65.0 < high and high - low < 25
    macro_low, macro_high = m.macro_interval(credits, ["a"] * 40 + ["b"] * 60, n_boot=2000, seed=3)
    assert macro_low < m.macro_accuracy(credits, ["a"] * 40 + ["b"] * 60) < macro_high


def test_micro_and_macro_differ_on_unbalanced_categories():
    correct = [True] * 9 + [False] + [False, True]
    categories = ["big"] * 10 + ["small"] * 2
    assert m.micro_accuracy(correct) == pytest.approx(100 * 10 / 12)
    assert m.macro_accuracy(correct, categories) == pytest.approx((90 + 50) / 2)


def test_bivlc_hand_computed():
    # item 0: all four right; item 1: text side right, image side wrong; item 2: a tie in Ipos2T
    scores = np.array(
        [
            [[0.9, 0.1], [0.2, 0.8]],
            [[0.9, 0.1], [0.95, 0.99]],
            [[0.5, 0.5], [0.2, 0.8]],
        ]
    )
    outcomes = m.bivlc_outcomes(scores)
    assert outcomes["i2t"].tolist() == [True, True, False]
    assert outcomes["t2i"].tolist() == [True, False, True]
    assert outcomes["group"].tolist() == [True, False, False]
    assert m.bivlc_ties(scores) == 1


def test_hard_positive_brittleness_both_directions():
    outcomes = m.hard_positive_outcomes([0.9, 0.1, 0.9], [0.5, 0.5, 0.5], [0.1, 0.9, 0.8])
    assert outcomes["brittleness"].tolist() == [True, True, False]
    assert outcomes["aug_acc"].tolist() == [False, False, True]


def test_recall_at_k_with_ties_against_the_positive():
    scores = [[0.5, 0.6, 0.7, 0.1, 0.2], [0.5, 0.5, 0.1, 0.1, 0.1]]
    assert m.recall_at_k(scores, 1).tolist() == [False, False]
    assert m.recall_at_k(scores, 3).tolist() == [True, True]


def test_undefined_percent_is_nan_not_zero():
    assert np.isnan(m.percent([]))
    assert np.isnan(m.macro_accuracy([], []))


# --- invariants (hypothesis) ------------------------------------------------------------------

unit = st.floats(min_value=-1, max_value=1, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(unit, unit, unit, unit), min_size=1, max_size=40))
def test_group_never_exceeds_i2t_or_t2i(rows):
    scores = np.array([[[a, b], [c, d]] for a, b, c, d in rows])
    outcomes = m.bivlc_outcomes(scores)
    assert m.percent(outcomes["group"]) <= min(m.percent(outcomes["i2t"]), m.percent(outcomes["t2i"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(unit, unit, unit), min_size=1, max_size=40))
def test_augmented_accuracy_never_exceeds_original(rows):
    c, cn, cp = (np.array(x) for x in zip(*rows))
    outcomes = m.hard_positive_outcomes(c, cn, cp)
    assert m.percent(outcomes["aug_acc"]) <= m.percent(outcomes["orig_acc"])
    assert not np.any((outcomes["aug_acc"] == 1) & (outcomes["brittleness"] == 1))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(unit, unit, st.sampled_from(["a", "b", "c"])), min_size=1, max_size=40), st.randoms())
def test_pair_metrics_do_not_depend_on_item_order(rows, rng):
    shuffled = list(rows)
    rng.shuffle(shuffled)
    summaries = []
    for data in (rows, shuffled):
        pos, neg, cats = zip(*data)
        correct = m.credit(pos, neg)
        summaries.append((m.micro_accuracy(correct), m.macro_accuracy(correct, cats)))
    assert summaries[0] == pytest.approx(summaries[1])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(unit, min_size=4, max_size=4), min_size=1, max_size=30))
def test_recall_grows_with_k(rows):
    r1, r3, r5 = (m.percent(m.recall_at_k(rows, k)) for k in (1, 3, 5))
    assert r1 <= r3 <= r5 == 100.0


def _resampled_interval(statistic, n_items: int, n_boot: int = 2000) -> tuple[float, float]:
    """The textbook bootstrap: resample item indices with replacement, percentile interval."""
    rng = np.random.default_rng(1)
    values = [statistic(rng.integers(0, n_items, n_items)) for _ in range(n_boot)]
    return tuple(np.percentile(values, [2.5, 97.5]))


def test_fast_intervals_match_resampling_items():
    rng = np.random.default_rng(0)
    categories = rng.choice(["swap_obj", "add_att", "replace_rel"], size=600, p=[0.1, 0.3, 0.6])
    correct = rng.random(600) < np.where(categories == "swap_obj", 0.6, 0.85)
    share = m.share_interval(correct, n_boot=2000)
    macro = m.macro_interval(correct, categories, n_boot=2000)
    assert np.allclose(share, _resampled_interval(lambda i: m.percent(correct[i]), 600), atol=0.6)
    assert np.allclose(macro, _resampled_interval(lambda i: m.macro_accuracy(correct[i], categories[i]), 600), atol=0.8)
    assert macro[1] - macro[0] > share[1] - share[0]  # the small swap_obj category widens the macro interval


def test_run_metrics_are_stored_until_the_run_is_scored_again(fresh_db, monkeypatch):
    from foil_studio.data import store
    from foil_studio.data.formats import Parsed
    from foil_studio.data.items import Item
    from foil_studio.data.loading import store_parsed

    parsed = Parsed("jsonl", "tiny")
    for n in range(40):
        parsed.add(
            Item(
                "pair",
                "swap_att" if n % 2 else "add_obj",
                f"x/{n}",
                (f"a red cup {n}", f"a blue cup {n}"),
                (f"{n}.jpg",),
            ),
            "x",
            n,
        )
    store_parsed(fresh_db, parsed, source_format="jsonl", path="x")
    dataset_id = store.get_dataset(fresh_db, "tiny")["id"]
    ids = [i["id"] for i in store.list_items(fresh_db, dataset_id, limit=100)]
    run_id = store.ensure_run(fresh_db, dataset_id, "model", run_type="scores", model="model")
    store.put_scores(fresh_db, run_id, [(i, [0.3, 0.1]) for i in ids])  # every item right
    first = run_metrics(fresh_db, "tiny", "model", n_boot=50)
    before = store.dataset_fingerprint(fresh_db, "tiny")
    with monkeypatch.context() as patch:
        patch.setattr(m, "summarize", lambda *a, **k: pytest.fail("a stored summary was recomputed"))
        assert run_metrics(fresh_db, "tiny", "model", n_boot=50) == first
    assert first["metrics"]["accuracy_micro"] == 100.0
    store.put_scores(fresh_db, run_id, [(i, [0.1, 0.3]) for i in ids])  # the same items scored again, now all wrong
    assert store.dataset_fingerprint(fresh_db, "tiny") != before  # page caches see it though no row was added
    assert run_metrics(fresh_db, "tiny", "model", n_boot=50)["metrics"]["accuracy_micro"] == 0.0


# --- strictness and exact values, one comparison at a time (they kill the mutants that survived) --


def test_every_comparison_is_strict_and_ties_are_counted():
    from foil_studio.analysis import metrics as m

    a, b = [1.0, 1.0, 2.0, 0.0], [1.0, 0.5, 2.0, 0.5]
    assert m.credit(a, b).tolist() == [0.0, 1.0, 0.0, 0.0] and int(m.tied(a, b).sum()) == 2


# s[i, c] = s(C_c, I_i) starts with every direction right: [[0.9, 0.1], [0.2, 0.8]]. One cell is
# raised to tie a comparison; worked by hand: (cell, value) -> (ipos2t, ineg2t, tpos2i, tneg2i).
TIE_CASES = {
    "ipos2t tied": ((0, 1), 0.9, (False, True, True, False)),  # s01 = s00; s01 also beats s11
    "ineg2t tied": ((1, 0), 0.8, (True, False, True, True)),  # s10 = s11; s00 still beats s10
    "tpos2i tied": ((1, 0), 0.9, (True, False, False, True)),  # s10 = s00; s10 also beats s11
    "tneg2i tied": ((0, 1), 0.8, (True, True, True, False)),  # s01 = s11; s00 still beats s01
}


@pytest.mark.parametrize("case", sorted(TIE_CASES))
def test_a_tie_fails_its_bivlc_direction_and_the_groups_built_on_it(case):
    from foil_studio.analysis import metrics as m

    cell, value, (ipos2t, ineg2t, tpos2i, tneg2i) = TIE_CASES[case]
    s = np.array([[[0.9, 0.1], [0.2, 0.8]]])
    s[0][cell] = value
    outcomes = {k: bool(v[0]) for k, v in m.bivlc_outcomes(s).items()}
    i2t, t2i = ipos2t and ineg2t, tpos2i and tneg2i
    assert outcomes == {
        "ipos2t": ipos2t,
        "ineg2t": ineg2t,
        "tpos2i": tpos2i,
        "tneg2i": tneg2i,
        "i2t": i2t,
        "t2i": t2i,
        "group": i2t and t2i,
    }
    assert m.bivlc_ties(s) == 1


def test_bivlc_ties_count_each_of_the_four_comparisons():
    from foil_studio.analysis import metrics as m

    assert m.bivlc_ties(np.full((3, 2, 2), 0.5)) == 12  # every comparison of every item
    assert m.bivlc_ties(np.array([[[0.9, 0.1], [0.2, 0.8]]])) == 0


def test_hard_positive_outcomes_are_strict_at_every_boundary():
    from foil_studio.analysis import metrics as m

    c, cn, cp = [0.5, 0.5, 0.9, 0.9, 0.2], [0.5, 0.3, 0.4, 0.4, 0.4], [0.1, 0.3, 0.4, 0.6, 0.6]
    outcomes = {k: v.tolist() for k, v in m.hard_positive_outcomes(c, cn, cp).items()}
    assert outcomes == {
        "orig_acc": [False, True, True, True, False],
        "aug_acc": [False, False, False, True, False],
        "brittleness": [False, False, False, False, True],
    }


def test_recall_at_k_counts_ties_against_the_true_caption():
    from foil_studio.analysis import metrics as m

    scores = [[0.5, 0.4, 0.3, 0.2], [0.5, 0.5, 0.3, 0.2], [0.3, 0.5, 0.4, 0.2], [0.1, 0.5, 0.4, 0.2]]
    assert [m.recall_at_k(scores, k).tolist() for k in (1, 2, 3)] == [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, True, False],
    ]


def test_per_category_counts_and_shares_in_sorted_order():
    from foil_studio.analysis import metrics as m

    result = m.per_category([True, False, True, True, False], ["b", "a", "b", "a", "a"])
    assert list(result) == ["a", "b"] and result == {"a": (3, pytest.approx(100 / 3)), "b": (2, 100.0)}


def test_chance_levels_of_every_metric():
    from foil_studio.analysis import metrics as m

    expected = {
        "accuracy_micro": 50,
        "accuracy_macro": 50,
        "macro_accuracy": 50,
        "accuracy": 50,
        "i2t": 25,
        "t2i": 25,
        "group": 100 / 6,
        "ipos2t": 50,
        "tneg2i": 50,
        "orig_acc": 50,
        "aug_acc": 100 / 3,
        "brittleness": 100 / 3,
    }
    assert {k: m.chance_level(k) for k in expected} == pytest.approx(expected)
    assert m.chance_level("recall_at_3", 5) == 60.0 and m.chance_level("recall_at_5", 4) == 100.0
    assert m.chance_level("recall_at_1") is None and m.chance_level("n_unparsed") is None


@pytest.mark.parametrize("n", [40, 400])
def test_share_interval_holds_the_value_matches_the_normal_width_and_follows_its_level(n):
    from foil_studio.analysis import metrics as m

    outcomes = np.arange(n) % 4 != 0  # 75% true
    low, high = m.share_interval(outcomes, n_boot=4000, seed=1)
    assert low < 75.0 < high
    normal = 2 * 1.96 * 100 * np.sqrt(0.75 * 0.25 / n)  # the textbook 95% width
    assert (high - low) == pytest.approx(normal, rel=0.2)
    low90, high90 = m.share_interval(outcomes, n_boot=4000, seed=1, level=0.90)
    assert low < low90 < high90 < high
    assert m.share_interval(outcomes, n_boot=4000, seed=1) == (low, high)  # seeded: the same numbers again
    assert all(np.isnan(v) for v in m.share_interval([], n_boot=10)) and all(
        np.isnan(v) for v in m.share_interval(outcomes, n_boot=0)
    )


@pytest.mark.parametrize(
    ("sizes", "accuracies"),
    [([60, 30, 10], [0.9, 0.6, 0.3]), ([30, 2, 1, 1], [0.2, 1.0, 1.0, 1.0])],
    ids=["large categories", "categories of one or two items"],
)
def test_macro_interval_agrees_with_resampling_items_explicitly(sizes, accuracies):
    from foil_studio.analysis import metrics as m

    rng = np.random.default_rng(5)
    categories = np.repeat([f"c{n}" for n in range(len(sizes))], sizes)
    outcomes = rng.random(sum(sizes)) < np.repeat(accuracies, sizes)
    fast = m.macro_interval(outcomes, categories, n_boot=4000, seed=2)
    picks = rng.integers(0, sum(sizes), size=(4000, sum(sizes)))  # the naive oracle: resample items, recompute
    naive = np.percentile([m.macro_accuracy(outcomes[p], categories[p]) for p in picks], [2.5, 97.5])
    assert fast == pytest.approx(tuple(naive), abs=2.5)
    assert fast[0] < m.macro_accuracy(outcomes, categories) < fast[1]


def test_summarize_reports_every_outcome_and_category_with_intervals_around_them():
    from foil_studio.analysis import metrics as m

    outcomes = {"x": [True, True, False, True, False, True], "y": [False, False, True, True, True, True]}
    summary = m.summarize(outcomes, ["b", "a", "b", "a", "a", "b"], macro=("x", "x_macro"), n_boot=500)
    assert summary["n"] == 6 and summary["metrics"] == pytest.approx(
        {"x": 400 / 6, "y": 400 / 6, "x_macro": (200 / 3 + 200 / 3) / 2}
    )
    assert summary["by_category"] == {
        "a": {"n": 3, "x": pytest.approx(200 / 3), "y": pytest.approx(200 / 3)},
        "b": {"n": 3, "x": pytest.approx(200 / 3), "y": pytest.approx(200 / 3)},
    }
    for key, (low, high) in summary["intervals"].items():
        assert low <= summary["metrics"][key] <= high and high > low
    for category, intervals in summary["category_intervals"].items():
        assert set(intervals) == {"x", "y"}
        assert all(low <= summary["by_category"][category][k] <= high for k, (low, high) in intervals.items())
    assert (
        m.summarize(outcomes, ["b", "a", "b", "a", "a", "b"], macro=("x", "x_macro"), n_boot=500) == summary
    )  # seeded


def test_summarize_splits_by_the_right_category_and_uses_the_resamples_asked_for():
    from foil_studio.analysis import metrics as m

    outcomes, categories = {"x": [True, True, True, False, False, True]}, ["a", "a", "a", "b", "b", "b"]
    summary = m.summarize(outcomes, categories, macro=("x", "x_macro"), n_boot=1)
    assert summary["by_category"] == {"a": {"n": 3, "x": 100.0}, "b": {"n": 3, "x": pytest.approx(100 / 3)}}
    # one resample: every interval is a single point
    assert all(low == high for low, high in summary["intervals"].values())
    assert all(low == high for per in summary["category_intervals"].values() for low, high in per.values())


def test_exact_share_interval_is_clopper_pearson_by_hand_and_as_statsmodels_gives_it():
    """2 of 2 right: the lower end p solves p^2 = 0.025 (sqrt(0.025) = 0.1581), the upper is 1, where
    every bootstrap resample says 100 to 100; 27 of 30 is statsmodels' beta interval."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = m.exact_share_interval([True, True])
    assert low == pytest.approx(100 * 0.025**0.5, abs=1e-9) and high == 100.0
    assert m.share_interval([True, True], n_boot=200) == (100.0, 100.0)  # what the bootstrap said
    expected = proportion_confint(27, 30, alpha=0.05, method="beta")
    assert m.exact_share_interval([True] * 27 + [False] * 3) == pytest.approx(tuple(100 * x for x in expected))
    assert m.exact_share_interval([0, 0]) == pytest.approx((0.0, 100 * (1 - 0.025**0.5)))
    assert all(np.isnan(v) for v in m.exact_share_interval([]))


def test_summarize_asked_for_exact_intervals_gives_them_to_0_1_outcomes_only():
    outcomes, categories = [True] * 27 + [False] * 3, ["a"] * 28 + ["b"] * 2
    exact = m.summarize({"x": outcomes, "credit": [0.5] * 30}, categories, macro=("x", "macro"), n_boot=50, exact=True)
    assert exact["intervals"]["x"] == m.exact_share_interval(outcomes)
    assert exact["category_intervals"]["a"]["x"] == m.exact_share_interval(outcomes[:28])
    assert exact["category_intervals"]["b"]["x"] == m.exact_share_interval([False, False])
    assert exact["intervals"]["macro"] == m.macro_exact_interval(outcomes, categories)
    plain = m.summarize({"x": outcomes, "credit": [0.5] * 30}, categories, macro=("x", "macro"), n_boot=50)
    assert exact["intervals"]["credit"] == plain["intervals"]["credit"]  # half credits keep the bootstrap
    assert exact["metrics"] == plain["metrics"] and exact["intervals"]["x"] != plain["intervals"]["x"]


def test_the_exact_macro_interval_averages_bonferroni_clopper_pearson_ends():
    """Two categories, 1 of 1 and 0 of 1 right: each end at 97.5%, 1 - 0.0125 and 0.0125 by hand
    (p^1 = 0.0125), averaged; one category is its own Clopper-Pearson interval."""
    low, high = m.macro_exact_interval([True, False], ["a", "b"])
    assert (low, high) == pytest.approx((100 * 0.0125 / 2, 100 * (1 + 0.9875) / 2))
    assert m.macro_exact_interval([True, True, False], ["a"] * 3) == m.exact_share_interval([True, True, False])
    assert m.macro_interval([True, True], ["a", "b"], n_boot=100) == (100.0, 100.0)  # what the bootstrap said
    assert m.macro_exact_interval([True, True], ["a", "b"])[0] == pytest.approx(1.25)
    assert all(np.isnan(v) for v in m.macro_exact_interval([], []))


def test_brittleness_needs_strict_orders():
    """Brittle: right on the original pair but the negative beats the hard positive, or the hard
    positive beats the negative while the negative beats the caption. Ties are not orders."""
    from foil_studio.analysis import metrics as m

    s_c, s_cn, s_cp = [0.5, 0.5, 0.4, 0.3], [0.5, 0.4, 0.4, 0.4], [0.6, 0.4, 0.5, 0.4]
    assert m.hard_positive_outcomes(s_c, s_cn, s_cp)["brittleness"].tolist() == [False, False, False, False]
    assert m.hard_positive_outcomes([0.3], [0.4], [0.5])["brittleness"].tolist() == [True]


def _tied_sugarcrepe_run(db, fixtures):
    """SugarCrepe's swap_obj file scored so that items 0-9 tie, the rest are right."""
    from foil_studio.data import store

    import_path(db, "sugarcrepe", fixtures / "sugarcrepe" / "data" / "swap_obj.json")
    dataset_id = store.get_dataset(db, "sugarcrepe")["id"]
    ids = [i["id"] for i in store.list_items(db, dataset_id, limit=1000)]
    with store.transaction(db):
        run_id = store.ensure_run(db, dataset_id, "tied", run_type="scores", model="m")
        store.put_scores(db, run_id, [(item, [0.5, 0.5] if n < 10 else [0.6, 0.2]) for n, item in enumerate(ids)])
    return len(ids)


def test_each_benchmark_says_its_tie_rule_and_an_override_changes_only_the_tied_items(fresh_db, fixtures):
    n = _tied_sugarcrepe_run(fresh_db, fixtures)
    default = run_metrics(fresh_db, "sugarcrepe", "tied", n_boot=20)
    assert default["tie_rule"]["rule"] == "wrong" and "pos > neg" in default["tie_rule"]["why"]
    assert default["ties"] == 10 and default["by_category"]["swap_obj"]["ties"] == 10
    assert default["metrics"]["accuracy_micro"] == pytest.approx(100 * (n - 10) / n)
    right = run_metrics(fresh_db, "sugarcrepe", "tied", n_boot=20, ties="right")
    half = run_metrics(fresh_db, "sugarcrepe", "tied", n_boot=20, ties="half")
    assert right["metrics"]["accuracy_micro"] == 100.0 and right["tie_rule"] == {
        "rule": "right",
        "why": "chosen for this table instead of the benchmark's rule (sugarcrepe's own rule is wrong)",
    }
    assert half["metrics"]["accuracy_micro"] == pytest.approx(100 * (n - 5) / n)
    assert (
        run_metrics(fresh_db, "sugarcrepe", "tied", n_boot=20)["metrics"] == default["metrics"]
    )  # stored apart per rule


def test_metrics_cli_takes_a_tie_rule_and_refuses_an_unknown_one(tmp_path, fixtures):
    db_file = tmp_path / "t.db"
    from foil_studio.data import store

    db = store.open_db(db_file)
    n = _tied_sugarcrepe_run(db, fixtures)
    db.conn.close()
    command = [
        *FOIL_CLI,
        "metrics",
        "sugarcrepe",
        "--run",
        "tied",
        "--bootstrap",
        "10",
        "--json",
        "--db",
        str(db_file),
    ]
    right = subprocess.run([*command, "--ties", "right"], capture_output=True, text=True, cwd=REPO)
    assert right.returncode == 0, right.stderr
    assert json.loads(right.stdout)["metrics"]["accuracy_micro"] == 100.0
    unknown = subprocess.run([*command, "--ties", "coin"], capture_output=True, text=True, cwd=REPO)
    assert unknown.returncode != 0 and "wrong" in unknown.stderr and "half" in unknown.stderr and n > 10


def test_a_summary_stored_by_an_older_version_is_computed_anew(demo_db):
    """Summaries are stored per run and settings; one stored before the summary's keys changed
    (BiVLC's types mixed into `by_category`) must not be served as it was."""
    from foil_studio.analysis import results
    from foil_studio.analysis.models import demo_model_spec, load_model
    from foil_studio.analysis.scoring import score_dataset
    from foil_studio.data import store

    score_dataset(demo_db, "demo-bivlc", load_model(demo_model_spec(), device="cpu"), run="demo-clip")
    run_id = store.get_run(demo_db, "demo-bivlc", "demo-clip")["id"]
    old_shape = {
        "dataset": "demo-bivlc",
        "run": "demo-clip",
        "n": 1,
        "metrics": {},
        "by_category": {"replace": {}},
        "intervals": {},
    }
    store.put_run_summary(demo_db, run_id, "n_boot=20;seed=0;ties=wrong", old_shape)  # the key an older version wrote
    result = results.run_metrics(demo_db, "demo-bivlc", "demo-clip", n_boot=20)
    assert "replace" in result["by_type"] and "replace" not in result["by_category"]


# The page helpers and the imported-decision paths of `analysis.results`, on hand-made runs and
# summaries whose every figure is counted by hand in the comments.
def _columns(run_type, categories, outcomes=None, scores=None, kind="pair"):
    from foil_studio.data.store import RunColumns

    n = len(categories)
    return RunColumns(
        run_type=run_type,
        item_ids=np.arange(1, n + 1),
        kinds=np.array([kind] * n),
        categories=np.array(categories),
        scores=None if scores is None else np.array(scores, dtype=float),
        outcomes=outcomes if outcomes is not None else [None] * n,
    )


def _answer(correct, parsed=True, reported=False):
    return {"correct": correct, "parsed": parsed, "reported_correct": reported}


def test_a_choices_run_is_right_only_under_every_order_and_pools_its_answers():
    from foil_studio.analysis import results
    from foil_studio.data import formats

    run = _columns(
        "choices",
        ["a", "a", "b"],
        [
            {"ba": _answer(False, parsed=False, reported=True), "ab": _answer(True, reported=True)},
            {"ab": _answer(True)},
            {"ab": _answer(False), "ba": _answer(True)},
        ],
    )
    every, per = choices.choice_correct(run)
    assert every.tolist() == [False, True, False] and every.dtype == bool
    assert per == {"ab": [True, True, False], "ba": [False, None, True]}
    family = results.run_family(run)
    assert family.name == "choices"
    assert family.credits(run).tolist() == [0.0, 1.0, 0.0]
    shown = family.per_item(run)
    assert set(shown) == {"correct", "right when ab", "right when ba"}
    assert shown["correct"].tolist() == [False, True, False] and shown["right when ba"] == [False, None, True]
    assert choices.choice_outcomes(run, "wrong")[1].tolist() == [0, 0, 0]
    summary = results.summarize_run(run, results.Settings(formats.source_format("gpt4v"), n_boot=50))
    # five answers: right 3 of 5, reported right 2 of 5 (the first item's two), one unparsed
    assert summary["metrics"]["accuracy"] == pytest.approx(60.0)
    assert summary["metrics"]["accuracy_reported"] == pytest.approx(40.0)
    assert summary["metrics"]["n_unparsed"] == 1
    assert summary["n"] == 3
    assert summary["by_category"]["a"]["n"] == 2 and summary["by_category"]["b"]["n"] == 1  # items, not answers
    assert summary["by_ordering"] == {
        "ab": {"n": 3, "accuracy": pytest.approx(200 / 3), "n_unparsed": 0},
        "ba": {"n": 2, "accuracy": pytest.approx(50.0), "n_unparsed": 1},
    }


def test_imported_decisions_are_read_per_item_and_a_missing_one_is_refused():
    from foil_studio.analysis import results

    run = _columns("correct", ["a", "a", "b"], [{"correct": 1}, {"correct": 0}, {"correct": True}])
    outcomes, tied = pairwise.pair_outcomes(run, "wrong")
    assert outcomes["accuracy_micro"].tolist() == [1.0, 0.0, 1.0]
    assert tied.tolist() == [0, 0, 0] and tied.dtype.kind == "i"
    gap = _columns("correct", ["a", "a", "b"], [{"correct": 1}, None, None])
    with pytest.raises(results.UnsupportedRunError, match="^2 items of this run have no imported decision"):
        pairwise.pair_outcomes(gap, "wrong")
    mixed = _columns("scores", ["a", "b"], scores=[[0.2, 0.1], [0.3, 0.4]])
    mixed.kinds[1] = "triple"
    with pytest.raises(results.UnsupportedRunError, match="mixes item kinds"):
        family_base.item_kind(mixed)


def test_caption_means_are_the_plain_means_overall_and_per_category():

    run = _columns("scores", ["a", "a", "b"], scores=[[0.3, 0.1, 0.2], [0.5, 0.3, 0.4], [0.9, 0.2, 0.1]], kind="triple")
    summary = {"metrics": {}, "by_category": {"a": {}, "b": {}}}
    hard_positive.add_caption_means(summary, run, {}, None)
    means = ("mean_s_c", "mean_s_cn", "mean_s_cp")
    assert [summary["metrics"][k] for k in means] == pytest.approx([1.7 / 3, 0.2, 0.7 / 3])
    assert [summary["by_category"]["a"][k] for k in means] == pytest.approx([0.4, 0.2, 0.3])
    assert [summary["by_category"]["b"][k] for k in means] == pytest.approx([0.9, 0.2, 0.1])
    untouched = {"metrics": {}, "by_category": {"a": {}}}
    hard_positive.add_caption_means(untouched, _columns("correct", ["a"], [{"correct": 1}]), {}, None)
    assert untouched == {"metrics": {}, "by_category": {"a": {}}}


SUMMARIES = {
    "r1": {
        "n": 3,
        "metrics": {"acc": 50.0, "mean_s_c": 0.2, "n_unparsed": 0},
        "intervals": {"acc": [40.0, 60.0]},
        "by_category": {"a": {"n": 2, "acc": 100.0, "ties": 1}, "b": {"n": 1, "acc": 0.0}},
        "category_intervals": {"a": {"acc": [90.0, 100.0]}},
        "tie_rule": {"rule": "wrong", "why": "its own rule"},
        "ties": 1,
    },
    "r2": {
        "n": 3,
        "metrics": {"acc": 25.0},
        "intervals": {},
        "by_category": {"a": {"n": 2, "acc": 50.0}},
        "by_type": {"t": {"n": 3, "acc": 10.0}},
        "type_intervals": {"t": {"acc": [5.0, 15.0]}},
    },
    "r3": {"n": 3, "metrics": {}, "intervals": {}, "tie_rule": {"rule": "half", "why": "chosen"}},
    "r4": {"n": 3, "metrics": {}, "intervals": {}, "tie_rule": {"rule": "wrong", "why": "its own rule"}},
}


def test_category_table_lists_each_runs_figure_interval_and_ties_per_category():
    from foil_studio.analysis.results import category_table

    assert category_table(SUMMARIES, ["r1", "r2"], "acc") == [
        {"category": "a", "n": 2, "r1": 100.0, "r1 95% CI": [90.0, 100.0], "r1 ties": 1, "r2": 50.0, "r2 95% CI": None},
        {"category": "b", "n": 1, "r1": 0.0, "r1 95% CI": None, "r1 ties": 0},
        {
            "category": "(all)",
            "n": 3,
            "r1": 50.0,
            "r1 95% CI": [40.0, 60.0],
            "r1 ties": 1,
            "r2": 25.0,
            "r2 95% CI": None,
        },
    ]
    assert category_table(SUMMARIES, ["r2"], "acc", level="type") == [
        {"category": "t", "n": 3, "r2": 10.0, "r2 95% CI": [5.0, 15.0]},
        {"category": "(all)", "n": 3, "r2": 25.0, "r2 95% CI": None},
    ]
    # a run without types has only its overall row on the types' table
    assert [row["category"] for row in category_table(SUMMARIES, ["r1"], "acc", level="type")] == ["(all)"]


def test_tie_rules_said_once_per_rule_of_the_runs_asked_for():
    from foil_studio.analysis.results import tie_rules_said

    assert tie_rules_said(SUMMARIES, ["r1", "r2", "r4"]) == ["A tie counts as wrong: its own rule."]
    assert tie_rules_said(SUMMARIES, ["r3", "r1"]) == [
        "A tie counts as half: chosen.",
        "A tie counts as wrong: its own rule.",
    ]


def test_error_bars_are_the_distances_to_the_interval_ends():
    from foil_studio.analysis.results import error_bars

    assert error_bars([50.0, 20.0], [[40.0, 70.0], None]) == {
        "type": "data",
        "symmetric": False,
        "array": [20.0, 0.0],
        "arrayminus": [10.0, 0.0],
        "thickness": 1,
    }


def test_overview_rows_carry_the_metrics_or_the_note_and_name_only_headline_metrics():
    from foil_studio.analysis.results import overview_metrics, runs_overview

    rows = runs_overview(
        [{"run": "r1", "model": "m", "n_items": 3}, {"run": "x", "model": "n"}],
        {"r1": SUMMARIES["r1"], "x": {"note": "no scores"}},
    )
    assert rows == [
        {"run": "r1", "model": "m", "n_items": 3, "acc": 50.0, "mean_s_c": 0.2, "n_unparsed": 0},
        {"run": "x", "model": "n", "note": "no scores"},
    ]
    assert overview_metrics(rows[0]) == ["acc"] and overview_metrics(rows[1]) == []


def test_chance_levels_take_the_summarys_own_else_the_metrics_constant():
    from foil_studio.analysis.results import chance_levels

    summary = {"chance": {"(all)": {"recall_at_1": 30.0}, "a": {"recall_at_1": 25.0}}}
    assert chance_levels(summary, "recall_at_1", ["(all)", "a", "b"]) == [30.0, 25.0, m.chance_level("recall_at_1")]
    assert chance_levels({}, "group", ["(all)"]) == [pytest.approx(100 / 6)]


def test_run_summaries_are_the_cli_metrics_of_every_run(demo_db):
    from foil_studio.analysis import results
    from foil_studio.analysis.models import ModelSpec, load_model
    from foil_studio.analysis.scoring import score_dataset
    from foil_studio.data import store

    dataset = "demo-sugarcrepe"
    score_dataset(demo_db, dataset, load_model(ModelSpec("foil-demo-clip", "none"), device="cpu"), run="random")
    summaries = results.run_summaries(demo_db, dataset)
    names = [r["run"] for r in store.list_runs(demo_db, dataset)]
    assert list(summaries) == names and names
    for name in names:
        assert summaries[name] == results.run_metrics(demo_db, dataset, name, n_boot=results.BOOTSTRAP)


def test_over_seeds_is_each_figures_mean_and_standard_error_over_the_seed_categories():
    from scipy import stats

    from foil_studio.analysis import results

    by_category = {
        "seed 0": {"n": 40, "ties": 3, "precision_at_1": 20.0, "macro": 10.0},
        "seed 1": {"n": 40, "ties": 0, "precision_at_1": 30.0, "macro": 14.0},
        "seed 2": {"n": 40, "ties": 1, "precision_at_1": 27.5, "macro": 12.0},
    }
    over = family_base.over_seeds(by_category)
    assert list(over) == ["precision_at_1", "macro"]  # counts are not figures
    for metric in over:
        values = [figures[metric] for figures in by_category.values()]
        assert over[metric]["mean"] == pytest.approx(np.mean(values))
        assert over[metric]["se"] == pytest.approx(stats.sem(values))
        assert over[metric]["n_seeds"] == 3
    assert family_base.over_seeds({}) == {}
    assert results.over_seeds_sentence(over) == (
        "over 3 seeds (mean ± standard error of the seeds' figures): "
        f"precision_at_1 25.83 ± {stats.sem([20.0, 30.0, 27.5]):.2f}; macro 12.00 ± 1.15"
    )


def test_metric_rows_lay_out_the_whole_set_then_types_then_categories_one_row_per_metric():
    from foil_studio.analysis.results import metric_rows

    plain = {
        "n": 10,
        "ties": 2,
        "metrics": {"accuracy": 60.0, "macro": 55.0},
        "intervals": {"accuracy": [30.0, 90.0]},
        "by_category": {"a": {"n": 6, "ties": 2, "accuracy": 50.0}, "b": {"n": 4, "accuracy": 75.0}},
        "category_intervals": {"a": {"accuracy": [10.0, 90.0]}},
    }
    assert metric_rows(plain) == [
        {"category": "(all)", "metric": "accuracy", "value": 60.0, "interval": [30.0, 90.0], "n": 10, "ties": 2},
        {"category": "(all)", "metric": "macro", "value": 55.0, "interval": None, "n": 10, "ties": 2},
        {"category": "a", "metric": "accuracy", "value": 50.0, "interval": [10.0, 90.0], "n": 6, "ties": 2},
        {"category": "b", "metric": "accuracy", "value": 75.0, "interval": None, "n": 4},
    ]
    untied = {k: v for k, v in plain.items() if k not in ("ties", "category_intervals")}
    assert [row.get("ties") for row in metric_rows(untied)] == [None, None, 2, None]
    typed = {
        **untied,
        "by_type": {"img2txt": {"n": 5, "accuracy": 40.0}},
        "type_intervals": {"img2txt": {"accuracy": [0.0, 80.0]}},
    }
    assert [(r["category"], r["per"], r["metric"], r["interval"]) for r in metric_rows(typed)] == [
        ("(all)", "", "accuracy", [30.0, 90.0]),
        ("(all)", "", "macro", None),
        ("img2txt", "type", "accuracy", [0.0, 80.0]),
        ("a", "category", "accuracy", None),
        ("b", "category", "accuracy", None),
    ]


def test_retrieval_chance_is_recall_at_k_of_a_random_ranking_over_each_items_own_options():
    """CREPE's items have varying numbers of captions (padded with NaN): chance of recall@k is
    min(1, k / options) per item, averaged overall and per category."""
    from foil_studio.analysis import results
    from foil_studio.data import formats

    scores = np.full((4, 5), np.nan)
    scores[0, :5] = [0.9, 0.1, 0.2, 0.3, 0.4]  # five options
    scores[1, :3] = [0.1, 0.9, 0.2]  # three
    scores[2, :2] = [0.9, 0.1]  # two
    scores[3, :4] = [0.1, 0.2, 0.9, 0.3]  # four
    run = _columns("scores", ["x", "x", "y", "y"], scores=scores, kind="retrieval")
    summary = results.summarize_run(run, results.Settings(formats.REGISTRY["crepe"], n_boot=10))
    chance = summary["chance"]
    options = np.array([5, 3, 2, 4])
    for k in (1, 3, 5):
        per_item = np.minimum(1.0, k / options)
        assert chance["(all)"][f"recall_at_{k}"] == pytest.approx(100 * per_item.mean())
        assert chance["x"][f"recall_at_{k}"] == pytest.approx(100 * per_item[:2].mean())
        assert chance["y"][f"recall_at_{k}"] == pytest.approx(100 * per_item[2:].mean())
    assert set(chance) == {"(all)", "x", "y"}
    assert results.chance_levels(summary, "recall_at_1", ["x", "(all)"]) == [
        pytest.approx(100 * (1 / 5 + 1 / 3) / 2),
        pytest.approx(100 * np.mean(1 / options)),
    ]


@pytest.mark.parametrize(
    ("family", "kind", "headline"),
    [
        ("pairwise", "pair", "accuracy_micro"),
        ("hard_positive", "triple", "aug_acc"),
        ("paraphrase", "paraphrase", "itt"),
        ("retrieval", "retrieval", "recall_at_1"),
    ],
)
def test_imported_decisions_are_each_familys_headline_with_no_ties(family, kind, headline):

    decisions = [{"correct": True}, {"correct": False}, {"correct": 1}, {"correct": 0}]
    run = _columns("correct", ["c"] * 4, outcomes=decisions, kind=kind)
    for ties in ("wrong", "right", "half"):
        outcomes, tied = metric_families.METRIC_FAMILIES[family].outcomes(run, ties)
        assert list(outcomes) == [headline] and outcomes[headline].tolist() == [1.0, 0.0, 1.0, 0.0]
        assert tied.tolist() == [0, 0, 0, 0]


def test_run_summaries_hold_every_run_of_the_dataset_under_the_subset_and_rule_asked_for(fresh_db, fixtures, tmp_path):
    """Only this dataset's runs (another dataset's run is not listed), each as `run_metrics`
    computes it with the same subset, tie rule and resamples; a run that cannot be scored is a
    note saying why. A whole-dataset summary computed first is not served for the subset."""
    from foil_studio.analysis import results
    from foil_studio.data import formats, store

    import_path(fresh_db, "valse", fixtures / "valse" / "data" / "existence.json", name="valse")
    import_path(fresh_db, "whatsup", formats.REGISTRY["whatsup"].write_source(tmp_path), name="spatial")
    valse = store.get_dataset(fresh_db, "valse")
    items = store.list_items(fresh_db, valse["id"], limit=10_000)
    valid = [item["id"] for item in items if item["truth"].get("valid_foil") is True]
    invalid = [item["id"] for item in items if item["id"] not in valid]
    runs = {name: store.ensure_run(fresh_db, valse["id"], name, run_type=run_type) for name, run_type in RUN_TYPES}
    spatial = store.get_dataset(fresh_db, "spatial")["id"]
    elsewhere = store.ensure_run(fresh_db, spatial, "elsewhere", run_type="scores")
    spatial_item = store.list_items(fresh_db, spatial, limit=1)[0]
    with store.transaction(fresh_db):
        store.put_scores(
            fresh_db, runs["scored"], [(item["id"], [0.3, 0.3 if n % 3 else 0.1]) for n, item in enumerate(items)]
        )
        store.put_outcomes(fresh_db, runs["decided"], [(i, {"correct": n % 2 == 0}) for n, i in enumerate(valid)])
        store.put_outcomes(fresh_db, runs["undecided"], [(valid[0], {"correct": True})])
        store.put_scores(fresh_db, runs["undecided"], [(valid[1], [0.3, 0.1])])
        store.put_scores(fresh_db, runs["outside"], [(invalid[0], [0.3, 0.1])])
        store.put_scores(fresh_db, elsewhere, [(spatial_item["id"], [0.3, 0.1, 0.1, 0.1])])
    whole = results.run_metrics(fresh_db, "valse", "scored", n_boot=20, ties="half")
    summaries = results.run_summaries(fresh_db, "valse", n_boot=20, subset="valid", ties="half")
    assert list(summaries) == [name for name, _ in RUN_TYPES]
    assert summaries["scored"] == results.run_metrics(
        fresh_db, "valse", "scored", n_boot=20, subset="valid", ties="half"
    )
    assert (whole["n"], summaries["scored"]["n"]) == (len(items), len(valid)) and "subset" not in whole
    assert summaries["scored"]["subset"] == "valid" and summaries["scored"]["tie_rule"]["rule"] == "half"
    assert summaries["decided"]["n"] == len(valid) and "tie_rule" not in summaries["decided"]  # decisions: no ties
    assert summaries["undecided"] == {"note": "1 items of this run have no imported decision"}
    assert summaries["outside"] == {"note": "run 'outside' on 'valse' has no scored items in subset 'valid'"}
    assert (summaries["scored"]["dataset"], summaries["scored"]["run"]) == ("valse", "scored")
    store.ensure_run(fresh_db, valse["id"], "empty", run_type="scores")
    with pytest.raises(results.UnsupportedRunError) as empty:
        results.run_metrics(fresh_db, "valse", "empty")
    assert str(empty.value) == "run 'empty' on 'valse' has no scored items"


RUN_TYPES = [("scored", "scores"), ("decided", "correct"), ("undecided", "correct"), ("outside", "scores")]


def test_an_order_set_summary_carries_its_seeds_mean_and_standard_error():
    from foil_studio.analysis import results
    from foil_studio.data import formats

    rng = np.random.default_rng(5)
    scores = rng.choice([0.1, 0.2, 0.3], size=(30, 5))
    run = _columns("scores", [f"seed {n % 3}" for n in range(30)], scores=scores, kind="retrieval")
    summary = results.summarize_run(run, results.Settings(formats.MADE_HERE["aro-order"], "right", n_boot=20))
    assert summary["over_seeds"] == family_base.over_seeds(summary["by_category"])
    assert summary["over_seeds"]["precision_at_1"]["n_seeds"] == 3
    plain = results.summarize_run(run, results.Settings(formats.REGISTRY["crepe"], "right", n_boot=20))
    assert "over_seeds" not in plain  # categories that are not seeds have no mean over them


def test_a_benchmarks_names_reach_every_part_of_its_summary_and_dropped_metrics_leave_all():
    """What'sUp calls recall@1 individual accuracy and drops recall@3 and @5: renamed in the
    metrics, intervals, per category and its intervals, and the chance levels alike."""
    from foil_studio.analysis import results
    from foil_studio.data import formats

    scores = np.array([[0.9, 0.1, 0.2, 0.3], [0.1, 0.9, 0.2, 0.3], [0.9, 0.1, np.nan, np.nan]])
    run = _columns("scores", ["controlled_a", "controlled_a", "coco_one"], scores=scores, kind="retrieval")
    summary = results.summarize_run(run, results.Settings(formats.REGISTRY["whatsup"], n_boot=20))
    parts = [
        summary["metrics"],
        summary["intervals"],
        *summary["by_category"].values(),
        *summary["category_intervals"].values(),
        *summary["chance"].values(),
    ]
    for part in parts:
        assert "individual_accuracy" in part and not {"recall_at_1", "recall_at_3", "recall_at_5"} & set(part)
    assert summary["chance"]["coco_one"]["individual_accuracy"] == pytest.approx(50.0)
    assert summary["category_intervals"]["controlled_a"]["individual_accuracy"] is not None


def test_bivlc_types_count_their_subtypes_ties_and_resample_as_asked():
    """BiVLC's `replace` holds `replace_obj` and `replace_att`: its ties are theirs added up, and
    its interval is the one `metrics.summarize` gives the types with the run's resamples and seed."""
    from foil_studio.analysis import metrics, results
    from foil_studio.data import formats

    tied, clear = [[0.5, 0.5], [0.2, 0.6]], [[0.9, 0.1], [0.2, 0.8]]
    scores = np.array([tied, clear, tied, clear, clear, tied])
    categories = ["replace_obj", "replace_obj", "replace_att", "replace_att", "swap_obj", "swap_obj"]
    run = _columns("scores", categories, scores=scores, kind="group")
    settings = results.Settings(formats.REGISTRY["bivlc"], "wrong", n_boot=30, seed=4)
    summary = results.summarize_run(run, settings)
    by_category = summary["by_category"]
    assert (
        summary["by_type"]["replace"]["ties"] == by_category["replace_obj"]["ties"] + by_category["replace_att"]["ties"]
    )
    assert summary["by_type"]["replace"]["ties"] == 2 and summary["by_type"]["swap"]["ties"] == 1
    outcomes, _ = metric_families.METRIC_FAMILIES["bivlc"].outcomes(run, "wrong")
    types = family_base.category_types(run.categories, settings.source)
    expected = metrics.summarize(outcomes, types, n_boot=30, seed=4)["category_intervals"]
    assert summary["type_intervals"]["replace"]["group"] == expected["replace"]["group"]


def test_a_chosen_tie_rule_says_whether_it_is_also_the_benchmarks_own():
    from foil_studio.analysis import results
    from foil_studio.data import formats

    whatsup = formats.REGISTRY["whatsup"]  # its own rule: right
    assert results.tie_rule(whatsup, None) == {"rule": "right", "why": f"whatsup's own rule: {whatsup.ties_because}"}
    assert results.tie_rule(whatsup, "right")["why"] == (
        "chosen for this table instead of the benchmark's rule (also whatsup's own rule)"
    )
    assert results.tie_rule(whatsup, "half")["why"] == (
        "chosen for this table instead of the benchmark's rule (whatsup's own rule is right)"
    )
    with pytest.raises(ValueError, match="unknown tie rule"):
        results.tie_rule(whatsup, "coin")


def test_categories_are_typed_only_where_they_are_subtypes_of_the_formats_types():
    from foil_studio.data import formats

    bivlc = formats.REGISTRY["bivlc"]
    assert family_base.category_types(np.array(["replace_obj", "swap_att"]), bivlc).tolist() == ["replace", "swap"]
    assert family_base.category_types(np.array(["replace", "swap"]), bivlc) is None  # already types
    assert family_base.category_types(np.array(["replace_obj"]), formats.REGISTRY["winoground"]) is None


def test_imported_bivlc_decisions_combine_into_its_seven_outcomes_with_no_ties():
    from foil_studio.analysis import metrics

    keys = ("ipos2t", "ineg2t", "tpos2i", "tneg2i")
    decisions = [dict(zip(keys, row)) for row in ([1, 1, 1, 1], [1, 0, 1, 1], [0, 0, 0, 0])]
    run = _columns("groups", ["c"] * 3, outcomes=decisions, kind="group")
    outcomes, tied = metric_families.METRIC_FAMILIES["bivlc"].outcomes(run, "half")
    expected = metrics.combine_bivlc(**{k: np.array([float(d[k]) for d in decisions]) for k in keys})
    assert set(outcomes) == set(metrics.BIVLC_KEYS)
    assert all(np.array_equal(outcomes[k], expected[k]) for k in outcomes)
    assert outcomes["group"].tolist() == [1.0, 0.0, 0.0] and tied.tolist() == [0, 0, 0]

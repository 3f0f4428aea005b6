"""Agreement: textbook values, scikit-learn equality, undefined cases, simulated annotators."""

from __future__ import annotations

import json
import subprocess
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from foil_studio.annotate import agreement, batch_reports, batches, simulation
from foil_studio.data import store
from foil_studio.data.plain_text import figure, interval_text
from tests.conftest import FOIL_CLI, REPO

pytestmark = pytest.mark.both_engines

# Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories, kappa = 0.210.
FLEISS_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers, 12 units,
# missing values; nominal alpha = 0.743.
KRIPPENDORFF = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def test_fleiss_reproduces_the_textbook_example():
    rows = [[str(c) for c, n in enumerate(counts) for _ in range(n)] for counts in FLEISS_COUNTS]
    table = pd.DataFrame(rows, columns=[f"r{i}" for i in range(14)])
    value, n, reason = agreement.fleiss(table)
    assert round(value, 3) == 0.210 and n == 10 and reason is None


def test_krippendorff_reproduces_the_textbook_example():
    table = pd.DataFrame({k: [None if v is None else str(v) for v in values] for k, values in KRIPPENDORFF.items()})
    value, n, reason = agreement.krippendorff_alpha(table)
    assert round(value, 3) == 0.743 and n == 11  # unit 12 has a single value and drops out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("abc")), min_size=2, max_size=60))
def test_our_kappa_equals_scikit_learn(pairs):
    x, y = zip(*pairs)
    table = pd.DataFrame({"p": list(x), "q": list(y)})
    ours = agreement.cohen_pairs(table)[0]
    if len(set(x) | set(y)) < 2:
        assert ours["kappa"] is None and "undefined" in ours
        return
    expected = cohen_kappa_score(x, y)
    if np.isnan(expected):
        assert ours["kappa"] is None
    else:
        assert ours["kappa"] == pytest.approx(expected)


def test_undefined_cases_say_why():
    one_class = pd.DataFrame({"a": ["image"] * 5, "b": ["image"] * 5})
    report = agreement.agreement_report(one_class, n_boot=20)
    assert report["cohen_pairs"][0]["kappa"] is None and "same class" in report["cohen_pairs"][0]["undefined"]
    assert report["fleiss"] is None and "same class" in report["undefined"]["fleiss"]
    assert report["percent_agreement"] == 100.0
    disjoint = pd.DataFrame({"a": ["x", "y", None, None], "b": [None, None, "x", "y"]})
    pair = agreement.cohen_pairs(disjoint)[0]
    assert pair["n"] == 0 and pair["kappa"] is None and "shared" in pair["undefined"]


def test_kappa_paradox_ac1_stays_high_when_kappa_collapses():
    rng = np.random.default_rng(1)
    truth = np.where(rng.random(300) < 0.95, "image", "none")
    flip = {"image": "none", "none": "image"}
    table = pd.DataFrame({r: [t if rng.random() < 0.93 else flip[t] for t in truth] for r in ("a", "b")})
    report = agreement.agreement_report(table, n_boot=50)
    assert report["percent_agreement"] > 85
    assert report["gwet_ac1"] > 0.8 > 0.5 > report["cohen_mean"]


# --- batches ----------------------------------------------------------------------------------------


@pytest.fixture
def db(demo_db):
    return demo_db


def simulated_batch(db, accuracy: float, seed: int) -> dict:
    created = batches.create_batch(
        db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben", "cleo"), 2, 120, seed=seed)
    )
    simulation.simulate(db, created["batch"], accuracies=accuracy, seed=seed)
    return batch_reports.batch_agreement(db, created["batch"])


def test_kappa_drops_as_simulated_accuracy_drops(db):
    careful = simulated_batch(db, 0.97, seed=1)
    sloppy = simulated_batch(db, 0.65, seed=2)
    assert careful["n_labels"] == sloppy["n_labels"] == 240
    assert careful["krippendorff_alpha"] > sloppy["krippendorff_alpha"] + 0.2
    assert careful["percent_agreement"] > sloppy["percent_agreement"]
    assert all(p["n"] > 10 for p in careful["cohen_pairs"])


def test_simulating_items_with_no_known_answer_says_they_were_answered_at_random(tmp_path, capsys):
    """Issue 53: `simulate --accuracy 0.97` on imported items (no truth of whether a negative is valid)
    answered at random, exactly as 0.35, and said nothing. It still answers (any option is as good
    a guess), but counts those answers and says so, on the terminal and in --json."""
    from foil_studio import cli
    from foil_studio.data.loading import import_path

    source = tmp_path / "mine.jsonl"
    source.write_text(
        "".join(
            json.dumps({"kind": "pair", "category": "swap", "id": str(n), "captions": [f"a {n}", f"b {n}"]}) + "\n"
            for n in range(6)
        )
    )
    path = tmp_path / "f.db"
    db = store.open_db(path)
    import_path(db, "jsonl", source, name="mine")
    created = batches.create_batch(db, batches.BatchSpec("mine", "validate_negative", ("ada", "ben"), 2, name="b"))
    db.conn.close()
    assert cli.main(["simulate", created["batch"], "--accuracy", "0.97", "--db", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "answered_at_random: 12" in shown
    assert "12 of the 12 answers were to items with no known answer" in shown and "whatever the accuracy" in shown


def test_simulating_items_with_known_answers_says_nothing_of_chance(db):
    created = batches.create_batch(
        db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada",), 1, 10, seed=1)
    )
    result = simulation.simulate(db, created["batch"], accuracies=0.97, seed=1)
    assert result["answered_at_random"] == 0 and "note" not in result


def test_kappa_per_pair_equals_scikit_learn_on_exported_labels(db, tmp_path):
    created = batches.create_batch(
        db, batches.BatchSpec("demo-bivlc-candidates", "pick_image", ("ada", "ben", "cleo"), 2, 90, seed=4)
    )
    simulation.simulate(db, created["batch"], accuracies={"ada": 0.95, "ben": 0.8, "cleo": 0.7}, seed=4)
    exported = [json.loads(line) for line in batch_reports.export_labels(db, created["batch"], "jsonl").splitlines()]
    frame = pd.DataFrame(
        [
            {
                "item": r["item"],
                "annotator": r["annotator"],
                "label": "none" if r["answer"]["answer"] == "none" else "image",
            }
            for r in exported
        ]
    )
    wide = frame.pivot(index="item", columns="annotator", values="label")
    report = batch_reports.batch_agreement(db, created["batch"])
    for pair in report["cohen_pairs"]:
        shared = wide[[pair["a"], pair["b"]]].dropna()
        assert pair["n"] == len(shared)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = cohen_kappa_score(shared[pair["a"]], shared[pair["b"]])
        assert pair["kappa"] is None if np.isnan(expected) else pair["kappa"] == pytest.approx(expected)
    assert any(pair["kappa"] is not None for pair in report["cohen_pairs"])


def test_agreement_cli_contract(db):
    created = batches.create_batch(
        db, batches.BatchSpec("demo-bivlc-candidates", "pick_image", ("ada", "ben", "cleo"), 2, 30, seed=6)
    )
    path = str(store.location(db))

    def run(*args):
        return subprocess.run(
            [*FOIL_CLI, *args, "--db", path, "--json"],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )

    simulated = json.loads(run("simulate", created["batch"], "--accuracy", "0.9").stdout)
    assert sum(simulated["labels_written"].values()) == 60
    report = json.loads(run("agreement", created["batch"]).stdout)
    expected = {
        "batch",
        "n_items",
        "n_labels",
        "percent_agreement",
        "cohen_pairs",
        "cohen_mean",
        "fleiss",
        "krippendorff_alpha",
        "gwet_ac1",
        "intervals",
        "undefined",
    }
    assert expected <= set(report)
    assert {"a", "b", "n", "kappa"} <= set(report["cohen_pairs"][0])


# --- human baselines --------------------------------------------------------------------------------


def bivlc_baseline(db, accuracy: float) -> dict:
    from foil_studio.annotate.baselines import human_baseline

    names = []
    for task in ("baseline_i2t", "baseline_t2i"):
        created = batches.create_batch(db, batches.BatchSpec("demo-bivlc", task, ("ada", "ben"), 1, 40, seed=3))
        simulation.simulate(db, created["batch"], accuracies=accuracy, seed=3)
        names.append(created["batch"])
    return human_baseline(db, names, n_boot=50)


def test_perfect_humans_score_100_and_the_four_queries_combine_like_models(db):
    perfect = bivlc_baseline(db, 1.0)
    assert perfect["n"] == 40 and all(v == 100.0 for v in perfect["metrics"].values())
    assert {"replace", "swap", "add"} & set(perfect["by_type"]) and not {"replace", "swap", "add"} & set(
        perfect["by_category"]
    )


def test_noisy_humans_group_never_exceeds_i2t_or_t2i(db):
    noisy = bivlc_baseline(db, 0.8)
    figures = noisy["metrics"]
    assert set(figures) == {"i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i", "tneg2i"}
    assert figures["group"] <= min(figures["i2t"], figures["t2i"]) < 100
    assert 50 < figures["ipos2t"] < 100


def by_hand(outcomes: dict[str, list[bool]], keys) -> dict[str, float]:
    return {key: 100 * float(np.mean(outcomes[key])) for key in keys}


def bivlc_batches_answered_apart(db) -> list[str]:
    """The same 40 BiVLC instances asked in both directions, each batch answered at 70% with its own
    seed (so no figure equals another by construction); the two batch names."""
    names = []
    for task, seed in (("baseline_i2t", 3), ("baseline_t2i", 5)):
        created = batches.create_batch(db, batches.BatchSpec("demo-bivlc", task, ("ada", "ben"), 1, 40, seed=3))
        simulation.simulate(db, created["batch"], accuracies=0.7, seed=seed)
        names.append(created["batch"])
    return names


def test_a_bivlc_baseline_equals_its_four_queries_combined_by_hand(db):
    """Each BiVLC instance's four majority outcomes, read from the batches alone and combined here as
    the paper combines a model's: I2T both image queries right, T2I both caption queries, Group all
    four; overall, per category and per type (add, replace, swap). The two batches answer apart
    (other seeds), so no figure equals another by construction."""
    from foil_studio.annotate.baselines import human_baseline, question_outcomes

    names = bivlc_batches_answered_apart(db)
    result = human_baseline(db, names, n_boot=20)
    i2t, t2i = (question_outcomes(db, name) for name in names)
    complete = sorted({i for i, _ in i2t if all((i, p) in q for q in (i2t, t2i) for p in (0, 1))})
    category = {i: store.items_by_id(db, [i])[i]["category"] for i in complete}
    keys = ("i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i", "tneg2i")

    def outcomes(ids) -> dict[str, list[bool]]:
        rows = [(i2t[(i, 0)], i2t[(i, 1)], t2i[(i, 0)], t2i[(i, 1)]) for i in ids]
        return {
            "ipos2t": [r[0] for r in rows], "ineg2t": [r[1] for r in rows],
            "tpos2i": [r[2] for r in rows], "tneg2i": [r[3] for r in rows],
            "i2t": [r[0] and r[1] for r in rows], "t2i": [r[2] and r[3] for r in rows], "group": [all(r) for r in rows],
        }  # fmt: skip

    assert result["n"] == len(complete) == 40
    assert result["metrics"] == pytest.approx(by_hand(outcomes(complete), keys))
    assert len({result["metrics"][k] for k in ("i2t", "t2i", "group")}) == 3  # the check above tells them apart
    for name in sorted(set(category.values())):
        ids = [i for i in complete if category[i] == name]
        assert result["by_category"][name] == pytest.approx({"n": len(ids), **by_hand(outcomes(ids), keys)}), name
    for kind_of_edit in ("add", "replace", "swap"):
        ids = [i for i in complete if category[i].startswith(kind_of_edit + "_")]
        expected = {"n": len(ids), **by_hand(outcomes(ids), keys)}
        assert result["by_type"][kind_of_edit] == pytest.approx(expected), kind_of_edit


def test_one_answered_direction_gives_its_figure_from_its_two_queries(db):
    """Only the image-to-text batch: I2T (both of an instance's image queries right) and its two
    queries, nothing of the other direction."""
    from foil_studio.annotate.baselines import human_baseline, question_outcomes

    created = batches.create_batch(db, batches.BatchSpec("demo-bivlc", "baseline_i2t", ("ada",), 1, 30, seed=4))
    simulation.simulate(db, created["batch"], accuracies=0.7, seed=4)
    result = human_baseline(db, [created["batch"]], n_boot=20)
    asked = question_outcomes(db, created["batch"])
    complete = sorted({i for i, _ in asked if (i, 0) in asked and (i, 1) in asked})
    pos, neg = [asked[(i, 0)] for i in complete], [asked[(i, 1)] for i in complete]
    expected = {"i2t": [a and b for a, b in zip(pos, neg)], "ipos2t": pos, "ineg2t": neg}
    assert list(result["metrics"]) == ["i2t", "ipos2t", "ineg2t"]
    assert result["metrics"] == pytest.approx(by_hand(expected, expected)) and result["n"] == len(complete)


def test_humans_are_right_on_an_item_only_where_every_answered_question_is(db):
    """`item_outcomes` (the humans beside the models in Inspect runs): an item is right when the
    majority answer of each of its answered questions is, over every model-like batch of the dataset."""
    from foil_studio.annotate.baselines import item_outcomes, question_outcomes

    names = []
    for task, seed in (("baseline_i2t", 6), ("baseline_t2i", 7)):
        created = batches.create_batch(db, batches.BatchSpec("demo-bivlc", task, ("ada",), 1, 25, seed=6))
        simulation.simulate(db, created["batch"], accuracies=0.75, seed=seed)
        names.append(created["batch"])
    answered = [question_outcomes(db, name) for name in names]
    expected: dict[int, bool] = {}
    for outcomes in answered:
        for (item, _), right in outcomes.items():
            expected[item] = expected.get(item, True) and right
    found = item_outcomes(db, "demo-bivlc")
    assert found == expected and 0 < sum(found.values()) < len(found)
    assert item_outcomes(db, "demo-sugarcrepe") == {}  # another dataset's batches count for nothing


def test_validation_baseline_per_category(db):
    from foil_studio.annotate.baselines import human_baseline

    created = batches.create_batch(
        db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben", "cleo"), 3, 70, seed=8)
    )
    simulation.simulate(db, created["batch"], accuracies=1.0, seed=8)
    result = human_baseline(db, [created["batch"]], n_boot=20)
    assert result["metrics"]["accuracy_micro"] == 100.0 and result["n"] == 70


def test_a_human_figure_from_two_items_has_its_exact_interval_and_is_too_few_for_a_baseline(db):
    """It printed 100.00 (95% CI 100.00 to 100.00): every bootstrap resample of 2 right answers is 2
    right. Now the interval is Clopper-Pearson's (lower end sqrt(0.025) by hand), the figure says
    its n and that it is too few, and the page's sentence, the dataset's baseline and the CLI agree."""
    from foil_studio.annotate.baselines import BASELINE_MIN_ITEMS, dataset_baseline, figure_sentence, human_baseline
    from tests.test_cli import run_cli

    created = batches.create_batch(
        db, batches.BatchSpec("demo-sugarcrepe", "baseline_i2t", ("ada",), 1, 2, seed=1, name="two")
    )
    simulation.simulate(db, created["batch"], accuracies=1.0, seed=1)
    result = human_baseline(db, ["two"], n_boot=50)
    assert (result["n"], result["metrics"]["accuracy_micro"], BASELINE_MIN_ITEMS) == (2, 100.0, 30)
    assert result["intervals"]["accuracy_micro"] == pytest.approx((100 * 0.025**0.5, 100.0))
    said = "100.00 from 2 items (95% CI 15.81 to 100.00); too few for a baseline (30 needed)"
    assert result["figures"]["accuracy_micro"] == said and result["min_items"] == 30
    assert figure_sentence(result, "accuracy_micro") == f"Humans' accuracy_micro: {said}."
    assert figure_sentence(result, "group") == ""
    assert result["figures"]["accuracy_macro"].startswith("100.00 from 2 items (95% CI 1.25 to 100.00);")
    assert dataset_baseline(db, "demo-sugarcrepe")["figures"] == result["figures"]  # what the page draws
    printed = run_cli("baseline", "two", db=store.location(db))
    assert printed.returncode == 0 and said in printed.stdout, printed.stderr
    assert not {"nan", "None"} & set(printed.stdout.replace(",", " ").split())
    as_json = json.loads(run_cli("baseline", "two", "--json", db=store.location(db)).stdout)
    assert as_json["figures"] == result["figures"]


def test_kappa_matrix_is_symmetric_with_gaps_where_undefined():
    pairs = [
        {"a": "ada", "b": "ben", "kappa": 0.5},
        {"a": "ada", "b": "cleo", "kappa": None},
        {"a": "ben", "b": "cleo", "kappa": -0.25},
    ]
    matrix = agreement.kappa_matrix(pairs)
    assert list(matrix.index) == list(matrix.columns) == ["ada", "ben", "cleo"]
    assert matrix.loc["ada", "ben"] == matrix.loc["ben", "ada"] == 0.5
    assert matrix.loc["ben", "cleo"] == matrix.loc["cleo", "ben"] == -0.25
    assert (
        np.isnan(matrix.loc["ada", "cleo"])
        and np.isnan(matrix.loc["cleo", "ada"])
        and np.isnan(matrix.loc["ada", "ada"])
    )


def _labels(answers: dict[str, list[dict[str, str]]]) -> list[dict]:
    """Label rows as the store gives them: one per annotator and item, part 0."""
    return [
        {"item": n, "part": 0, "annotator": who, "answer": answer}
        for who, per_item in answers.items()
        for n, answer in enumerate(per_item)
    ]


def test_each_question_of_a_two_question_task_is_agreed_on_alone_and_together():
    """compare_negatives asks commonsense and grammar: kappa per question is sklearn's kappa on
    that question's answers; pooled, each (item, question) is one unit."""
    from sklearn.metrics import cohen_kappa_score

    from foil_studio.annotate import agreement

    sense_a, sense_b = ["1", "2", "tie", "1", "2", "1"], ["1", "2", "1", "1", "tie", "1"]
    grammar_a, grammar_b = ["2", "2", "1", "1", "tie", "2"], ["1", "2", "2", "1", "1", "2"]
    labels = _labels(
        {
            "ada": [{"commonsense": s, "grammar": g} for s, g in zip(sense_a, grammar_a)],
            "ben": [{"commonsense": s, "grammar": g} for s, g in zip(sense_b, grammar_b)],
        }
    )
    report = agreement.task_agreement(labels, "compare_negatives", n_boot=50)
    assert set(report["by_question"]) == {"commonsense", "grammar"} and report["level"] == "nominal"
    assert report["by_question"]["commonsense"]["cohen_mean"] == pytest.approx(cohen_kappa_score(sense_a, sense_b))
    assert report["by_question"]["grammar"]["cohen_mean"] == pytest.approx(cohen_kappa_score(grammar_a, grammar_b))
    assert report["n_items"] == 12 and report["by_question"]["grammar"]["n_items"] == 6
    assert report["cohen_mean"] == pytest.approx(cohen_kappa_score(sense_a + grammar_a, sense_b + grammar_b))
    assert agreement.task_agreement(labels, "compare_negatives", n_boot=50) == report  # seeded


def test_ranks_are_agreed_on_as_ordinal_per_caption():
    import krippendorff

    from foil_studio.annotate import agreement

    ada = [
        {"rank_0": "1", "rank_1": "3", "rank_2": "2"},
        {"rank_0": "1", "rank_1": "2", "rank_2": "1"},
        {"rank_0": "2", "rank_1": "3", "rank_2": "1"},
        {"rank_0": "1", "rank_1": "1", "rank_2": "2"},
    ]
    ben = [
        {"rank_0": "1", "rank_1": "2", "rank_2": "3"},
        {"rank_0": "1", "rank_1": "3", "rank_2": "1"},
        {"rank_0": "1", "rank_1": "3", "rank_2": "2"},
        {"rank_0": "2", "rank_1": "1", "rank_2": "3"},
    ]
    report = agreement.task_agreement(_labels({"ada": ada, "ben": ben}), "rank_captions", n_boot=50)
    assert report["level"] == "ordinal" and set(report["by_question"]) == {"rank_0", "rank_1", "rank_2"}
    for question, alone in report["by_question"].items():
        data = [[float(a[question]) for a in ada], [float(b[question]) for b in ben]]
        assert alone["krippendorff_alpha"] == pytest.approx(
            krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
        )
    one_resample = agreement.task_agreement(_labels({"ada": ada, "ben": ben}), "rank_captions", n_boot=1)
    points = [
        (low, high) for low, high in one_resample["by_question"]["rank_1"]["intervals"].values() if low is not None
    ]
    assert points and all(low == high for low, high in points)


def test_pick_image_agreement_is_on_image_versus_none():
    from foil_studio.annotate import agreement

    labels = _labels(
        {
            "ada": [{"answer": "0"}, {"answer": "none"}, {"answer": "2"}],
            "ben": [{"answer": "1"}, {"answer": "none"}, {"answer": "none"}],
        }
    )
    table = agreement.ratings_table(labels, "pick_image")
    assert table.to_dict("list") == {"ada": ["image", "none", "image"], "ben": ["image", "none", "none"]}
    assert list(table.index) == [(0, 0), (1, 0), (2, 0)] and table.columns.name is None


def test_gwet_ac1_matches_the_published_formula_with_missing_labels():
    """Values checked against irrCAC 0.4.4 (Gwet's own package, ported): pa and pe there are
    17/21 and 2/7 for the three-rater table with gaps, 0.7 and 0.3275 for the two-rater one."""
    from foil_studio.annotate import agreement

    gaps = pd.DataFrame(
        {
            "a": ["x", "x", "y", "z", "x", None, "y"],
            "b": ["x", "y", "y", "z", None, "x", "y"],
            "c": ["x", "x", "y", "y", "x", "x", None],
        }
    )
    assert agreement.gwet_ac1(gaps) == (pytest.approx((17 / 21 - 2 / 7) / (1 - 2 / 7)), 7, None)
    two = pd.DataFrame({"a": list("1123122311"), "b": list("1223123312")})
    assert agreement.gwet_ac1(two)[0] == pytest.approx((0.7 - 0.3275) / (1 - 0.3275))
    assert agreement.agreement_report(gaps, n_boot=20)["gwet_ac1"] == pytest.approx(11 / 15)


def test_fleiss_counts_the_items_it_could_use_and_says_why_it_is_undefined():
    from foil_studio.annotate import agreement

    gaps = pd.DataFrame(
        {
            "a": ["x", "x", "y", "z", "x", None, "y"],
            "b": ["x", "y", "y", "z", None, "x", "y"],
            "c": ["x", "x", "y", "y", "x", "x", None],
        }
    )
    assert agreement.fleiss(gaps) == (None, 7, "raters per item vary; use Krippendorff's alpha")
    single = pd.DataFrame({"a": ["x", None, "y"], "b": [None, "y", None]})
    value, n, reason = agreement.fleiss(single)
    assert (value, n) == (None, 0) and "two or more labels" in reason


def test_agreement_report_intervals_use_the_resamples_asked_for_and_name_undefined_coefficients():
    from foil_studio.annotate import agreement

    table = pd.DataFrame({"a": list("xxyxyxxy"), "b": list("xyyxyxyy"), "c": list("xxyxxxxy")})
    single = agreement.agreement_report(table, n_boot=1)
    assert all(low == high for low, high in single["intervals"].values())
    assert agreement.agreement_report(table, n_boot=200) != single
    same = pd.DataFrame({"a": ["x"] * 4, "b": ["x"] * 4})  # every label the same class
    report = agreement.agreement_report(same, n_boot=20)
    assert report["cohen_mean"] is None and report["gwet_ac1"] is None
    assert set(report["undefined"]) >= {"cohen_mean", "gwet_ac1"} and all(report["undefined"].values())


# Three raters on 16 items, and each coefficient with its 95% interval from 200 resamples of items
# (seed 0). Reference values computed by explicit resampling, one library per coefficient: for each
# resample the rows `numpy.random.default_rng(0).integers(0, 16, 16)` (the stream
# `agreement.bootstrap` draws), then statsmodels 0.15 `fleiss_kappa(aggregate_raters(codes)[0])`,
# the mean of scikit-learn's `cohen_kappa_score` over the three pairs, `krippendorff.alpha`
# (nominal), and percent agreement and Gwet's AC1 (Gwet 2008: p_e = sum pi_k (1 - pi_k) / (q - 1))
# written out; `numpy.percentile(values, [2.5, 97.5])`. `resampled_fleiss` below repeats the Fleiss one.
THREE_RATERS = {"a": list("xxyxzyxxyyxzxxyx"), "b": list("xyyxzyxyyyxxxxyx"), "c": list("xxyzzyxxyxxzxyyx")}
RESAMPLED = {
    "percent_agreement": (75.0, 58.33333333333333, 91.66666666666666),
    "cohen_mean": (0.5787890913941335, 0.252476605295097, 0.8256171206014468),
    "fleiss": (0.5745937961595273, 0.22830158730158737, 0.8236176315959379),
    "krippendorff_alpha": (0.5834564254062038, 0.2443786375661376, 0.8272922642710226),
    "gwet_ac1": (0.6459741856177013, 0.45220137303388835, 0.879582064453946),
}


def resampled_fleiss(table: pd.DataFrame, n_boot: int, seed: int) -> tuple[float, float]:
    """Fleiss' kappa's percentile interval by explicit resampling of items, with statsmodels."""
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    codes = np.unique(table.to_numpy(), return_inverse=True)[1].reshape(table.shape)
    rng = np.random.default_rng(seed)
    values = [fleiss_kappa(aggregate_raters(codes[rng.integers(0, len(codes), len(codes))])[0]) for _ in range(n_boot)]
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def test_every_coefficient_and_its_interval_equal_explicit_resampling_with_the_libraries():
    table = pd.DataFrame(THREE_RATERS)
    report = agreement.agreement_report(table, n_boot=200, seed=0)
    for key, (value, low, high) in RESAMPLED.items():
        assert report[key] == pytest.approx(value, rel=1e-12), key
        assert report["intervals"][key] == pytest.approx((low, high), rel=1e-12), key
    assert resampled_fleiss(table, 200, 0) == pytest.approx(RESAMPLED["fleiss"][1:], rel=1e-12)


def test_fleiss_kappa_has_its_interval_in_the_table_the_protocol_and_the_api(db):
    from foil_studio import api
    from foil_studio.annotate.export import protocol_paragraph

    created = batches.create_batch(
        db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada", "ben", "cleo"), 3, 60, seed=4)
    )
    simulation.simulate(db, created["batch"], accuracies=0.85, seed=4)
    report = api.Studio(db).agreement(created["batch"])
    low, high = report["intervals"]["fleiss"]
    assert low < report["fleiss"] < high
    row = next(r for r in agreement.coefficient_rows(report) if r["coefficient"] == "Fleiss' kappa")
    assert row["95% interval"] and row["95% interval"] == interval_text((low, high))
    assert f"Fleiss' kappa {figure(report['fleiss'])} (95% CI {row['95% interval']})" in protocol_paragraph(
        db, created["batch"]
    )


def test_rank_questions_are_named_by_the_caption_they_rank(demo_db):
    """The per-question rows said rank_0/1/2, where annotators saw "rank of caption (1)" (a display
    position, shuffled): each question ranks one caption role of the item, and says which."""
    spec = batches.BatchSpec("demo-hard-positives", "rank_captions", ("ada", "ben"), 2, 6, seed=1, name="ranks")
    simulation.simulate(demo_db, batches.create_batch(demo_db, spec)["batch"], accuracies=0.8)
    rows = agreement.question_rows(batch_reports.batch_agreement(demo_db, "ranks"))
    assert [row["question"] for row in rows] == [
        "rank of the positive caption",
        "rank of the negative caption",
        "rank of the hard positive caption",
    ]


def test_a_bivlc_baselines_intervals_are_clopper_pearsons_overall_and_per_type(db):
    """Every figure of the BiVLC baseline, overall and per type, has the exact (Clopper-Pearson)
    interval of its right answers among the complete instances (statsmodels' `beta`), not a
    bootstrap one."""
    from statsmodels.stats.proportion import proportion_confint

    from foil_studio.annotate.baselines import human_baseline

    names = bivlc_batches_answered_apart(db)
    result = human_baseline(db, names, n_boot=20)
    for key in ("i2t", "t2i", "group", "ipos2t"):
        right = round(result["metrics"][key] * result["n"] / 100)
        low, high = proportion_confint(right, result["n"], method="beta")
        assert result["intervals"][key] == pytest.approx([100 * low, 100 * high], abs=1e-6), key
    for kind_of_edit, figures in result["by_type"].items():
        right = round(figures["group"] * figures["n"] / 100)
        low, high = proportion_confint(right, figures["n"], method="beta")
        assert result["type_intervals"][kind_of_edit]["group"] == pytest.approx([100 * low, 100 * high], abs=1e-6)


@pytest.mark.parametrize("annotators", [("ada", "ben"), ("ada", "ben", "cleo")], ids=["two", "three"])
def test_a_questions_outcome_is_the_strict_majority_of_its_answers(db, annotators):
    """Each (item, part) is right where more of its answers are right than wrong, counted here from the
    stored labels: a 1-1 tie of two annotators is wrong, 2-1 of three is right and 1-2 wrong."""
    from foil_studio.annotate.baselines import question_outcomes
    from foil_studio.annotate.task_types import is_correct

    spec = batches.BatchSpec("demo-bivlc", "baseline_i2t", annotators, len(annotators), 30, seed=8)
    created = batches.create_batch(db, spec)
    simulation.simulate(db, created["batch"], accuracies=0.6, seed=8)
    batch = store.get_batch(db, created["batch"])
    labels = [label for label in store.batch_labels(db, batch["id"]) if not label["is_gold"]]
    items = store.items_by_id(db, {label["item"] for label in labels})
    tally: dict[tuple[int, int], tuple[int, int]] = {}
    for label in labels:
        right = is_correct(batch["task_type"], items[label["item"]], label["part"], label["answer"])
        said, against = tally.get((label["item"], label["part"]), (0, 0))
        tally[(label["item"], label["part"])] = (said + bool(right), against + (not right))
    assert question_outcomes(db, created["batch"]) == {unit: said > against for unit, (said, against) in tally.items()}
    splits = set(tally.values())
    assert {(1, 1)} <= splits if len(annotators) == 2 else {(2, 1), (1, 2)} <= splits


def test_a_human_figure_says_one_item_in_the_singular_and_no_interval_where_there_is_none():
    from foil_studio.annotate.baselines import figure_text

    assert figure_text(100.0, (2.5, 100.0), 1) == (
        "100.00 from 1 item (95% CI 2.50 to 100.00); too few for a baseline (30 needed)"
    )
    assert figure_text(50.0, None, 40) == "50.00 from 40 items"


def test_a_baseline_of_batches_on_two_datasets_or_with_no_answer_is_refused_saying_which(db):
    from foil_studio.annotate.baselines import BaselineError, human_baseline

    bivlc = batches.create_batch(db, batches.BatchSpec("demo-bivlc", "baseline_i2t", ("ada",), 1, 5, seed=1))
    pairs = batches.create_batch(db, batches.BatchSpec("demo-sugarcrepe", "validate_negative", ("ada",), 1, 5, seed=1))
    with pytest.raises(BaselineError, match=r"baseline batches must share one dataset, got \['demo-"):
        human_baseline(db, [bivlc["batch"], pairs["batch"]])
    with pytest.raises(
        BaselineError, match=f"^no question of {bivlc['batch']} has an answer yet: a baseline needs one$"
    ):
        human_baseline(db, [bivlc["batch"]])

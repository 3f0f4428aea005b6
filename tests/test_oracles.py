"""Tests that fail for the defects they are named after, each checked against an independent
computation: a recount from stored labels, or the interval properties every bootstrap must have.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from foil_studio.annotate import batch_reports, batches, consensus, export, queues, simulation
from foil_studio.data import store


def validate_batch(db, n: int, annotators=("ada", "ben"), seed: int = 3) -> str:
    spec = batches.BatchSpec(
        "demo-sugarcrepe", "validate_negative", annotators, len(annotators), n, seed=seed, min_seconds=0
    )
    return batches.create_batch(db, spec)["batch"]


def answer_all(db, batch: str, name: str, choose) -> None:
    me = store.ensure_annotator(db, name)["id"]
    while (state := queues.draw(db, me, batch)).task is not None:
        queues.submit_answer(db, me, batch, state.task, {"answer": choose(state.task.item_id)})


def test_a_tie_is_unresolved_never_broken_and_the_export_drops_it_as_such(demo_db, tmp_path):
    batch = validate_batch(demo_db, n=12)
    answer_all(demo_db, batch, "ada", lambda item: "negative_false")
    answer_all(demo_db, batch, "ben", lambda item: "negative_true" if item % 2 else "negative_false")
    labels = store.batch_labels(demo_db, store.get_batch(demo_db, batch)["id"])
    votes: dict[int, Counter] = {}
    for label in labels:  # the oracle: a recount of the stored labels
        votes.setdefault(label["item"], Counter())[label["answer"]["answer"]] += 1
    tied = {item for item, counts in votes.items() if len(counts) == 2}
    assert tied and len(tied) < len(votes)
    decided = {d.item: d for d in consensus.decisions(demo_db, batch)}
    assert {i for i, d in decided.items() if d.rule == "unresolved" and d.answer is None} == tied
    assert all(decided[i].answer == "negative_false" and decided[i].rule == "majority" for i in set(votes) - tied)
    assert {d.item for d in consensus.adjudication_queue(demo_db, batch)} == tied
    export.export_clean(demo_db, batch, "sugarcrepe", tmp_path / "out")
    provenance = json.loads((tmp_path / "out" / "provenance.json").read_text())
    unresolved = {r["item"] for r in provenance["removed"] if r["rule"].startswith("unresolved")}
    assert unresolved == tied and {k["item"] for k in provenance["kept"]} == set(votes) - tied


@pytest.mark.parametrize("key", ["percent_agreement", "cohen_mean", "krippendorff_alpha", "gwet_ac1"])
def test_agreement_intervals_hold_the_value_and_narrow_with_more_items(demo_db, key):
    widths = []
    for n in (20, 200):
        batch = validate_batch(demo_db, n=n, annotators=("ada", "ben", "cleo"), seed=n)
        simulation.simulate(demo_db, batch, accuracies=0.8, seed=n)
        report = batch_reports.batch_agreement(demo_db, batch)
        low, high = report["intervals"][key]
        assert low <= report[key] <= high and high > low, (key, n, low, report[key], high)
        widths.append(high - low)
    assert widths[1] < widths[0] * 0.8  # ten times the items: about a third of the width in theory


def test_answer_keys_join_questions_in_a_fixed_order():
    assert consensus.answer_key({"answer": "2"}) == "2"
    assert (
        consensus.answer_key({"grammar": "1", "commonsense": "tie"})
        == consensus.answer_key({"commonsense": "tie", "grammar": "1"})
        == "commonsense=tie|grammar=1"
    )


def test_the_adjudication_queue_holds_the_disputed_undecided_questions_only(demo_db):
    batch = validate_batch(demo_db, n=12)
    answer_all(demo_db, batch, "ada", lambda item: "negative_false")
    answer_all(demo_db, batch, "ben", lambda item: "unsure" if item % 3 == 0 else "negative_false")
    disputed = {
        i
        for i in {a["item_id"] for a in store.batch_assignments(demo_db, store.get_batch(demo_db, batch)["id"])}
        if i % 3 == 0
    }
    assert {d.item for d in consensus.adjudication_queue(demo_db, batch)} == disputed and disputed
    first = min(disputed)
    store.decide(demo_db, store.get_batch(demo_db, batch)["id"], first, 0, {"answer": "unsure"}, by="admin")
    assert {d.item for d in consensus.adjudication_queue(demo_db, batch)} == disputed - {first}
    decided = {d.item: d for d in consensus.decisions(demo_db, batch)}
    assert (decided[first].answer, decided[first].rule, decided[first].votes) == (
        "unsure",
        "admin",
        {"negative_false": 1, "unsure": 1},
    )


def _answer_gold(db, batch: str, shares: dict[str, float]) -> None:
    """Each annotator answers every item, right on gold items while their share of gold allows."""
    from foil_studio.annotate.task_types import expected_answer, is_correct

    items = store.items_by_id(db, {a["item_id"] for a in store.batch_assignments(db, store.get_batch(db, batch)["id"])})
    for name, right_share in shares.items():
        me = store.ensure_annotator(db, name)["id"]
        gold_seen = 0
        while (state := queues.draw(db, me, batch)).task is not None:
            item = items[state.task.item_id]
            right = expected_answer("validate_negative", item)
            wrong = next(
                o.value for o in state.task.options if not is_correct("validate_negative", item, 0, {"answer": o.value})
            )
            is_gold = state.task.item_id in {
                a["item_id"] for a in store.batch_assignments(db, store.get_batch(db, batch)["id"]) if a["is_gold"]
            }
            gold_seen += is_gold
            queues.submit_answer(
                db, me, batch, state.task, right if not is_gold or gold_seen <= right_share * 10 else {"answer": wrong}
            )


@pytest.mark.parametrize("ben_right", [0.0, 0.4, 0.7])
def test_gold_exclusion_follows_the_wilson_bound_against_the_pass_mark(demo_db, ben_right):
    """Left out only when the upper end of the Wilson 95% interval of gold accuracy is below the
    mark; the oracle is scipy's binomtest interval, not the app's statsmodels call."""
    from scipy.stats import binomtest

    spec = batches.BatchSpec(
        "demo-sugarcrepe",
        "validate_negative",
        ("ada", "ben"),
        2,
        20,
        gold_share=0.5,
        seed=8,
        min_seconds=0,
        gold_pass=50,
    )
    batch = batches.create_batch(demo_db, spec)["batch"]
    _answer_gold(demo_db, batch, {"ada": 1.0, "ben": ben_right})
    progress = {r["annotator"]: r for r in batch_reports.batch_progress(demo_db, batch)}
    oracle = []
    for name, row in progress.items():
        right = round(row["gold_accuracy"] * row["gold_n"] / 100)
        if binomtest(right, row["gold_n"]).proportion_ci(0.95, method="wilson").high < 0.5:
            oracle.append(name)
    excluded = consensus.excluded_annotators(demo_db, batch)
    assert [e.annotator for e in excluded] == oracle and (oracle == ["ben"]) == (ben_right == 0.0)
    assert all(e.gold_pass == 50 and e.gold_n == progress[e.annotator]["gold_n"] == 10 for e in excluded)
    assert all("with 95% confidence" in e.reason for e in excluded)
    votes = lambda **options: {sum(d.votes.values()) for d in consensus.decisions(demo_db, batch, **options)}  # noqa: E731
    assert votes(include_excluded=True) == {2} and votes() == (
        {1} if oracle else {2}
    )  # ben's vote is left out only when screened out


def test_a_single_gold_miss_excludes_nobody(demo_db):
    spec = batches.BatchSpec(
        "demo-sugarcrepe", "validate_negative", ("ada", "ben"), 2, 20, gold_share=0.05, seed=8, min_seconds=0
    )
    batch = batches.create_batch(demo_db, spec)["batch"]
    _answer_gold(demo_db, batch, {"ada": 1.0, "ben": 0.0})
    progress = {r["annotator"]: r for r in batch_reports.batch_progress(demo_db, batch)}
    assert progress["ben"]["gold_n"] == 1 and progress["ben"]["gold_accuracy"] == 0.0
    assert consensus.excluded_annotators(demo_db, batch) == [] and not progress["ben"]["screened_out"]


def test_dawid_skene_labels_every_question_and_agrees_with_a_clear_majority(demo_db):
    """Three annotators, two always right: the estimated label of each question is the truth."""
    from foil_studio.annotate.task_types import expected_answer

    batch = validate_batch(demo_db, n=10, annotators=("ada", "ben", "cleo"))
    items = store.items_by_id(
        demo_db, {a["item_id"] for a in store.batch_assignments(demo_db, store.get_batch(demo_db, batch)["id"])}
    )
    truth = {i: expected_answer("validate_negative", item)["answer"] for i, item in items.items()}
    answer_all(demo_db, batch, "ada", lambda item: truth[item])
    answer_all(demo_db, batch, "ben", lambda item: truth[item])
    answer_all(demo_db, batch, "cleo", lambda item: "unsure")
    estimate = consensus.dawid_skene(demo_db, batch)
    assert estimate["labels"] == {f"{i}:0": truth[i] for i in items}
    assert estimate["accuracy"]["ada"] > estimate["accuracy"]["cleo"]
    assert consensus.dawid_skene(demo_db, validate_batch(demo_db, n=2, annotators=("dan",))) == {
        "labels": {},
        "accuracy": {},
    }


def test_truth_rules_at_their_edges():
    """rank_captions: a three-way tie does not separate the negative; pick_image: None is wrong
    when some candidate is valid; no known truth gives no verdict."""
    from foil_studio.annotate.task_types import is_correct

    ranked = {"truth": {"negative": 1}}
    assert is_correct("rank_captions", ranked, 0, {"rank_0": "1", "rank_1": "2", "rank_2": "1"}) is True
    assert is_correct("rank_captions", ranked, 0, {"rank_0": "1", "rank_1": "1", "rank_2": "1"}) is False
    assert is_correct("rank_captions", ranked, 0, {"rank_0": "1", "rank_1": "2"}) is False  # a rank missing
    candidates = {"truth": {"valid": [False, True]}}
    assert is_correct("pick_image", candidates, 0, {"answer": "1"}) is True
    assert is_correct("pick_image", candidates, 0, {"answer": "0"}) is False
    assert is_correct("pick_image", candidates, 0, {"answer": "none"}) is False
    assert is_correct("pick_image", {"truth": {"valid": [False, False]}}, 0, {"answer": "none"}) is True
    assert is_correct("validate_negative", {"truth": {}}, 0, {"answer": "negative_false"}) is None

"""Tests that fail for the defects they are named after, each checked against an independent
computation: a recount from stored labels, or the interval properties every bootstrap must have.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from annotate import batches, consensus, export, store


def validate_batch(db, n: int, annotators=("ada", "ben"), seed: int = 3) -> str:
    spec = batches.BatchSpec("demo-sugarcrepe", "validate_negative", annotators, len(annotators), n, seed=seed, min_seconds=0)
    return batches.create_batch(db, spec)["batch"]


def answer_all(db, batch: str, name: str, choose) -> None:
    me = store.ensure_annotator(db, name)["id"]
    while (state := batches.draw(db, me, batch)).task is not None:
        batches.submit_answer(db, me, batch, state.task, {"answer": choose(state.task.item_id)})


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
        batches.simulate(demo_db, batch, accuracies=0.8, seed=n)
        report = batches.batch_agreement(demo_db, batch, n_boot=400)
        low, high = report["intervals"][key]
        assert low <= report[key] <= high and high > low, (key, n, low, report[key], high)
        widths.append(high - low)
    assert widths[1] < widths[0] * 0.8  # ten times the items: about a third of the width in theory

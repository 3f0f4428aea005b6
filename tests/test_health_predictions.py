"""Predictions as data for benchmark health (`annotate/health/powered.py`, `data/prediction_files.py`):
a predictor's output on every item imported from JSON lines or CSV, every bad file refused with its
row and nothing lost, and the report's prediction-powered shares beside the plain ones, in its
JSON, its tables, its methods paragraph and the command line."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from foil_studio.annotate import health
from foil_studio.annotate.simulation import simulate
from foil_studio.data import item_kinds, store
from foil_studio.data.item_kinds.truth import negative_verdict
from foil_studio.data.reading import BadInputError
from tests.test_cli import run_cli

DATASET = "demo-sugarcrepe"


def frame_items(db) -> list[dict]:
    """Every item a health sample can draw, with its source id, category and true verdict."""
    dataset_id = store.get_dataset(db, DATASET)["id"]
    rows = store.list_items(db, dataset_id, limit=1 << 20)
    health_items = {item for item, _, _ in store.item_sources(db, dataset_id, health.HEALTH_KINDS)}
    return [
        {
            "id": row["source_id"],
            "category": row["category"],
            "invalid": negative_verdict(item_kinds.item_kind(row["kind"]).truth_keys, row["truth"]) == "invalid",
        }
        for row in rows
        if row["id"] in health_items
    ]


def predictor_rows(db, agreement: float = 0.9, seed: int = 0) -> list[dict]:
    """A 0/1 predictor that agrees with each item's true verdict with probability `agreement`."""
    rng = np.random.default_rng(seed)
    return [
        {"id": row["id"], "invalid": int(row["invalid"] if rng.random() < agreement else not row["invalid"])}
        for row in frame_items(db)
    ]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def sampled_and_answered(db, budget: int = 70) -> None:
    drawn = health.plan_sample(db, DATASET, budget)
    health.create_sample_batch(db, drawn, ("ann-a", "ann-b", "ann-c"), overlap=3, name="health-1")
    simulate(db, "health-1", accuracies=1.0, seed=0)


def test_imported_predictions_power_the_report_beside_the_plain_shares(demo_db, tmp_path):
    rows = predictor_rows(demo_db)
    imported = health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "judge.jsonl", rows), "judge")
    assert store.list_prediction_sets(demo_db, DATASET)[0]["source"] == str(tmp_path / "judge.jsonl")
    share = float(np.mean([r["invalid"] for r in rows]))
    assert imported == {
        "dataset": DATASET,
        "predictions": "judge",
        "items": len(rows),
        "predicted_invalid": round(share, 4),
        "labels": True,
    }
    assert round(share, 4) != round(share, 5)  # the fifth decimal is cut
    sampled_and_answered(demo_db)
    report = health.health_report(demo_db, DATASET, n_boot=50, predictions="judge")
    powered = report["prediction_powered"]
    assert powered["predictions"] == "judge"
    strata = {row["category"]: row for row in report["strata"] if row["decided"]}
    assert [row["category"] for row in powered["by_category"]] == sorted(strata)
    for row in powered["by_category"]:  # the plain figure beside it is the report's own invalid share
        assert row["plain"] == strata[row["category"]]["invalid_share"]
        assert row["reported"] in ("plain", "prediction-powered")
        assert 0 <= row["agreement"] <= 1 and row["worth_human_answers"] > 0
    assert powered["overall"]["plain"] == report["overall"]["invalid_share"]
    assert powered["overall"]["covers"] == report["overall"]["covers"]
    # the methods paragraph says what the table shows
    table = health.powered_table(report)
    assert [row["category"] for row in table] == [*sorted(strata), "all"]
    everything = table[-1]
    sentence = re.search(r"With the predictions judge on every item.*?categories\.", report["methods"]).group(0)
    shown = re.fullmatch(r"([\d.]+) \(([\d.]+) to ([\d.]+)\)", everything["prediction-powered invalid % (95% CI)"])
    assert "{}% (95% CI {} to {})".format(*shown.groups()) in sentence, sentence
    assert f"agree with people on {everything['agreement %']}% of them at f >= 0.5" in sentence
    assert f"an AUC of {everything['AUC']}" in sentence
    mean_f, observed = everything["mean f / observed %"].split(" / ")
    assert f"predict {mean_f}% invalid on average where people found {observed}%" in sentence
    if everything["to cite"] == "powered":  # worth: as many answers as a plain interval that narrow needs
        assert f"as narrow as {everything['worth (answers)']} human answers would give" in sentence
    else:
        assert everything["worth (answers)"] == str(everything["decided"]) and "overall the plain one" in sentence
    narrower = sum(row["to cite"] == "powered" for row in table[:-1])
    assert f"the prediction-powered one in {narrower} of {len(table) - 1} categories" in sentence
    card = health.report_markdown(report)
    assert "## Prediction-powered invalid shares (predictions: judge)" in card
    assert json.loads(json.dumps(report))["prediction_powered"] == powered  # JSON as it is


def test_a_report_without_predictions_has_no_prediction_powered_part(demo_db):
    sampled_and_answered(demo_db, budget=30)
    report = health.health_report(demo_db, DATASET, n_boot=50)
    assert report["prediction_powered"] is None and health.powered_table(report) == []
    assert "predictions" not in report["methods"]


def test_csv_with_label_words_and_categories_reads_as_the_same_predictions(demo_db, tmp_path):
    rows = predictor_rows(demo_db)
    categories = {row["id"]: row["category"] for row in frame_items(demo_db)}
    worded = [
        {"id": r["id"], "category": categories[r["id"]], "invalid": "invalid" if r["invalid"] else "valid"}
        for r in rows
    ]
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "a.jsonl", rows), "from-jsonl")
    health.import_predictions(demo_db, DATASET, write_csv(tmp_path / "b.csv", worded), "from-csv")
    assert store.get_predictions(demo_db, DATASET, "from-jsonl") == store.get_predictions(demo_db, DATASET, "from-csv")
    listed = store.list_prediction_sets(demo_db, DATASET)
    assert [(s["name"], s["items"]) for s in listed] == [("from-csv", len(rows)), ("from-jsonl", len(rows))]


def test_a_name_imported_again_is_replaced_whole(demo_db, tmp_path):
    first, second = predictor_rows(demo_db, seed=1), predictor_rows(demo_db, seed=2)
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "a.jsonl", first), "judge")
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "b.jsonl", second), "judge")
    stored = store.get_predictions(demo_db, DATASET, "judge")
    by_source = {r["id"]: float(r["invalid"]) for r in second}
    frame = store.item_sources(demo_db, store.get_dataset(demo_db, DATASET)["id"], health.HEALTH_KINDS)
    assert stored == {item: by_source[source] for item, source, _ in frame}
    assert len(store.list_prediction_sets(demo_db, DATASET)) == 1


def bad_files():
    """(name, how the good rows are spoiled, the row the error names, what it says)."""
    return [
        ("unknown-id", lambda rows: [*rows, {"id": "no-such-item", "invalid": 1}], None, "not an item of the dataset"),
        ("repeated", lambda rows: [*rows, rows[0]], None, "was given a prediction already on row 1"),
        ("missing", lambda rows: rows[:-1], None, "every one needs a prediction"),
        (
            "above-one",
            lambda rows: [{**rows[0], "invalid": 1.5}, *rows[1:]],
            1,
            "invalid is 1.5; expected a probability",
        ),
        ("a-word", lambda rows: [{**rows[0], "invalid": "maybe"}, *rows[1:]], 1, "invalid is 'maybe'"),
        ("no-id", lambda rows: [{"invalid": 1}, *rows[1:]], 1, r"expected an object with \['id', 'invalid'\]"),
        ("category", lambda rows: [{**rows[0], "category": "nowhere"}, *rows[1:]], 1, "category 'nowhere'"),
    ]


@pytest.mark.parametrize(("case", "spoil", "row", "message"), bad_files(), ids=[b[0] for b in bad_files()])
def test_a_bad_prediction_file_is_refused_naming_its_row_and_the_stored_set_stays(
    demo_db, tmp_path, case, spoil, row, message
):
    good = predictor_rows(demo_db)
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "good.jsonl", good), "judge")
    before = store.get_predictions(demo_db, DATASET, "judge")
    bad = write_jsonl(tmp_path / f"{case}.jsonl", spoil([dict(r) for r in good]))
    with pytest.raises(BadInputError, match=message) as refused:
        health.import_predictions(demo_db, DATASET, bad, "judge")
    assert refused.value.file == str(bad)
    if row is not None:
        assert refused.value.row == row
    assert store.get_predictions(demo_db, DATASET, "judge") == before  # nothing lost, nothing mixed in


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("p.txt", "id,invalid\n", "expected a .jsonl .JSON lines. or .csv prediction file"),
        ("p.csv", "item,invalid\nx,1\n", r"missing column\(s\) \['id'\]"),
        ("p.csv", "id,invalid\n", "has a header but no rows"),
        ("p.csv", "id,invalid\nx,nan\n", "invalid is 'nan'"),
        ("p.jsonl", "{not json\n", "row 1"),
    ],
)
def test_a_file_of_the_wrong_shape_is_refused_in_one_line(demo_db, tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(BadInputError, match=message):
        health.import_predictions(demo_db, DATASET, path, "judge")
    assert store.list_prediction_sets(demo_db, DATASET) == []


def test_an_unknown_prediction_set_is_refused_naming_those_there_are(demo_db, tmp_path):
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "a.jsonl", predictor_rows(demo_db)), "judge")
    with pytest.raises(store.NotFoundError, match=r"no predictions named 'nope'.*predictions: judge"):
        store.get_predictions(demo_db, DATASET, "nope")


def test_the_command_line_imports_and_reports_with_predictions(demo_db, tmp_path):
    db = store.location(demo_db)
    path = write_csv(tmp_path / "judge.csv", predictor_rows(demo_db))
    imported = run_cli("health", "predictions", DATASET, str(path), "--name", "judge", "--json", db=db)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["predictions"] == "judge"
    sampled_and_answered(demo_db, budget=40)
    shown = run_cli("health", "report", DATASET, "--bootstrap", "50", "--predictions", "judge", db=db)
    assert shown.returncode == 0, shown.stderr
    assert "## Prediction-powered invalid shares (predictions: judge)" in shown.stdout
    refused = run_cli("health", "report", DATASET, "--predictions", "nope", db=db)
    assert (
        refused.returncode == 1 and refused.stderr.count("\n") == 1 and "no predictions named 'nope'" in refused.stderr
    )
    missing = run_cli("health", "predictions", DATASET, str(tmp_path / "none.csv"), "--name", "x", db=db)
    assert missing.returncode == 1 and "none.csv" in missing.stderr and missing.stderr.count("\n") == 1


def test_python_reads_the_same_prediction_powered_figures_as_the_command_line(demo_db, tmp_path):
    from foil_studio import api

    studio = api.Studio(demo_db)
    path = write_jsonl(tmp_path / "judge.jsonl", predictor_rows(demo_db))
    assert studio.import_predictions(DATASET, path, "judge")["items"] == len(predictor_rows(demo_db))
    sampled_and_answered(demo_db, budget=40)
    from_python = studio.health_report(DATASET, predictions="judge", n_boot=50)
    db = store.location(demo_db)
    printed = run_cli("health", "report", DATASET, "--bootstrap", "50", "--predictions", "judge", "--json", db=db)
    assert json.loads(printed.stdout)["prediction_powered"] == from_python["prediction_powered"]


def test_the_page_sets_the_prediction_powered_shares_beside_the_plain_ones(app, demo_db, tmp_path):
    from tests.conftest import APP_ADMIN

    sampled_and_answered(demo_db, budget=40)
    at = app(APP_ADMIN)
    at.switch_page("views/health.py").run()
    at.selectbox(key="health_dataset").set_value(DATASET).run()
    assert not at.exception
    assert any("health predictions" in c.value for c in at.caption)  # how to bring predictions in
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "judge.jsonl", predictor_rows(demo_db)), "judge")
    at.run()
    assert not at.exception and at.selectbox(key="health_predictions").value == "judge"
    expected = health.powered_table(health.health_report(demo_db, DATASET, predictions="judge"))
    shown = next(d.value for d in at.dataframe if "prediction-powered invalid % (95% CI)" in d.value.columns)
    assert shown.to_dict("records") == expected
    at.selectbox(key="health_predictions").set_value("none").run()
    assert not any("prediction-powered invalid % (95% CI)" in d.value.columns for d in at.dataframe)


def test_a_yes_probability_run_becomes_predictions_of_its_altered_captions(demo_db, tmp_path):
    """A VLM asked whether the image shows the altered caption: its yes-probability is the predicted
    probability that the negative is invalid. Checked against the reference loop of the scorer's
    test (one pair at a time), item by item on two items; an open_clip run and a partial run are refused."""
    from foil_studio.analysis.scorers import REGISTRY, vqascore
    from foil_studio.analysis.scorers.pairwise import score_with_family
    from foil_studio.analysis.scoring import load_image

    folder = vqascore.tiny_model(tmp_path)
    score_with_family(demo_db, DATASET, "vqascore", str(folder), precision="fp32", device="cpu", run="judge-run")
    made = health.predictions_from_run(demo_db, DATASET, "judge-run", "judge")
    stored = store.get_predictions(demo_db, DATASET, "judge")
    assert made["items"] == len(stored) == len(frame_items(demo_db)) and made["labels"] is False
    dataset = store.get_dataset(demo_db, DATASET)
    for item_id, item in store.items_by_id(demo_db, sorted(stored)[:2]).items():
        image = load_image(Path(dataset["image_root"]), item["images"][0])
        assert stored[item_id] == pytest.approx(vqascore.reference_score(folder, image, item["captions"][1]), abs=1e-5)
    (listed,) = store.list_prediction_sets(demo_db, DATASET)
    assert listed["source"] == "run judge-run" and listed["meta"]["model"].startswith("vqascore:")
    assert listed["meta"] == {
        "labels": False,
        "run": "judge-run",
        "model": listed["meta"]["model"],
        "rule": REGISTRY["vqascore"].rule,
    }
    from foil_studio.analysis.models import demo_model_spec, load_model
    from foil_studio.analysis.scoring import score_dataset

    score_dataset(demo_db, DATASET, load_model(demo_model_spec(), device="cpu"), run="clip")
    with pytest.raises(health.HealthError, match="predictions need a run of flava-itm, blip2-itm, vqascore"):
        health.predictions_from_run(demo_db, DATASET, "clip", "clip")
    score_with_family(demo_db, DATASET, "vqascore", str(folder), device="cpu", run="partial", limit=5)
    first_left = frame_items_with_sources(demo_db)[5][1]
    with pytest.raises(health.HealthError, match=f"scored 5 of the .* .not '{first_left}', ....; score the whole"):
        health.predictions_from_run(demo_db, DATASET, "partial", "partial")


def judge_run(db, name: str, altered, as_matrix: bool = False) -> None:
    """A stored vqascore run on every item with a negative: `altered(n)` is item n's score of its
    altered caption (as the scorer stores it: [positive, altered] per pair; `as_matrix`: one image's
    row of the two captions, as image-caption matrices are stored)."""
    dataset_id = store.get_dataset(db, DATASET)["id"]
    frame = store.item_sources(db, dataset_id, health.HEALTH_KINDS)
    with store.transaction(db):
        run_id = store.ensure_run(db, dataset_id, name, run_type="scores", model="vqascore:/models/judge")
        rows = [(item, [0.9, altered(n)]) for n, (item, _, _) in enumerate(frame)]
        store.put_scores(db, run_id, [(item, [pair]) for item, pair in rows] if as_matrix else rows)


def test_a_run_stored_as_one_images_row_of_captions_gives_its_altered_captions_score(demo_db):
    judge_run(demo_db, "judge", lambda n: n % 7 / 10, as_matrix=True)
    health.predictions_from_run(demo_db, DATASET, "judge", "judge")
    frame = frame_items_with_sources(demo_db)
    found = store.get_predictions(demo_db, DATASET, "judge")
    assert found == {item: pytest.approx(n % 7 / 10) for n, (item, _, _) in enumerate(frame)}


@pytest.mark.parametrize(
    ("altered", "said"),
    [
        (lambda n: float("nan") if n == 3 else 0.25, "NaN (no score)"),
        (lambda n: 1.5, "1.5"),
        (lambda n: -0.5 if n == 7 else 0.5, "-0.5"),
    ],
    ids=["nan", "above-one", "below-zero"],
)
def test_a_run_score_that_is_no_probability_is_refused_naming_the_run_and_the_item(demo_db, altered, said):
    """Issue 53: a run holding one NaN score answered "the store is damaged ... restore it from a
    backup" (the NaN passed the clamp to [0, 1] and the store refused it), and a run whose scores
    exceed 1 was taken as probabilities (clamped to 1) without a word. Both are refused, naming the run
    and the item, and a prediction set stored before under that name stays as it was."""
    frame = store.item_sources(demo_db, store.get_dataset(demo_db, DATASET)["id"], health.HEALTH_KINDS)
    bad = next(n for n in range(len(frame)) if not 0 <= altered(n) <= 1)
    judge_run(demo_db, "judge", lambda n: 0.5)
    health.predictions_from_run(demo_db, DATASET, "judge", "judge")
    before = store.get_predictions(demo_db, DATASET, "judge")
    judge_run(demo_db, "odd", altered)
    done = run_cli("health", "predictions", DATASET, "--from-run", "odd", "--name", "judge", db=store.location(demo_db))
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and not done.stdout, done.stderr
    assert f"run 'odd' scores item {frame[bad][1]!r} {said}, not a probability from 0 to 1" in done.stderr
    assert "damaged" not in done.stderr and "Traceback" not in done.stderr
    assert store.get_predictions(demo_db, DATASET, "judge") == before


def test_a_run_score_past_one_by_rounding_is_read_as_one(demo_db):
    judge_run(demo_db, "judge", lambda n: 1 + 1e-9 if n == 0 else 0.0)
    assert health.predictions_from_run(demo_db, DATASET, "judge", "judge")["items"] > 0
    assert max(store.get_predictions(demo_db, DATASET, "judge").values()) == 1.0
    from foil_studio.annotate.health.powered import ROUNDING, _probability

    assert _probability(-ROUNDING, "r", "s", "f") == 0.0 and _probability(1 + ROUNDING, "r", "s", "f") == 1.0
    with pytest.raises(health.HealthError, match="scores item 's' 1.00001, not a probability"):
        _probability(1 + 10 * ROUNDING, "r", "s", "f")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (("FILE", "--from-run", "judge-run"), "one of the three"),
        (("--from-run", "judge-run", "--from-batch", "cheap"), "one of the three"),
        ((), "one of the three"),
        (("--from-batch", "cheap"), "--from-batch and --annotator go together"),
        (("FILE", "--annotator", "ann-a"), "--from-batch and --annotator go together"),
    ],
)
def test_the_command_takes_one_source_of_predictions(demo_db, tmp_path, given, message):
    db = store.location(demo_db)
    arguments = [str(tmp_path / "p.jsonl") if a == "FILE" else a for a in given]
    refused = run_cli("health", "predictions", DATASET, *arguments, "--name", "judge", db=db)
    assert refused.returncode == 1 and message in refused.stderr
    assert refused.stderr.count("\n") == 1


def frame_items_with_sources(db) -> list[tuple[int, str, str]]:
    """(item, source id, category) of every item with a negative, in the store's order."""
    return store.item_sources(db, store.get_dataset(db, DATASET)["id"], health.HEALTH_KINDS)


def cheap_pass(db, accuracy: float = 0.85, answered: int | None = None) -> None:
    """One annotator's pass over every item with a negative (or the first `answered` of them)."""
    from foil_studio.annotate.batches import BatchSpec, create_batch

    items = tuple(item for item, _, _ in frame_items_with_sources(db))[:answered]
    create_batch(db, BatchSpec(DATASET, health.TASK, ("cheap",), overlap=1, item_ids=items, name="cheap"))
    simulate(db, "cheap", accuracies=accuracy, seed=4)


def test_one_annotators_answers_in_a_batch_become_predictions_on_every_item(demo_db):
    cheap_pass(demo_db)
    stored = health.predictions_from_answers(demo_db, DATASET, "cheap", "cheap", "one-pass")
    values = store.get_predictions(demo_db, DATASET, "one-pass")
    labels = {
        label["item"]: label["answer"]["answer"]
        for label in store.batch_labels(demo_db, store.get_batch(demo_db, "cheap")["id"])
    }
    expected = {"negative_true": 1.0, "negative_false": 0.0, "unsure": 0.5}
    assert values == {item: expected[answer] for item, answer in labels.items()}
    assert stored["items"] == len(values) == len(frame_items(demo_db))
    (kept,) = store.list_prediction_sets(demo_db, DATASET)
    assert (kept["name"], kept["source"]) == ("one-pass", "answers of cheap in cheap")
    assert kept["meta"] == {"labels": False, "batch": "cheap", "annotator": "cheap"}
    sampled_and_answered(demo_db, budget=70)
    report = health.health_report(demo_db, DATASET, predictions="one-pass")
    assert report["prediction_powered"]["overall"]["agreement"] > 0.7


def test_answers_that_cannot_be_predictions_are_refused(demo_db):
    cheap_pass(demo_db, answered=30)
    every = len(frame_items(demo_db))
    first_left = next(source for _, source, _ in frame_items_with_sources(demo_db)[30:])
    with pytest.raises(
        health.HealthError,
        match=f"answered 30 of the {every} items with a negative in batch 'cheap' .not '{first_left}', ...",
    ):
        health.predictions_from_answers(demo_db, DATASET, "cheap", "cheap", "one-pass")
    with pytest.raises(health.HealthError, match="'nobody' gave no answer in batch 'cheap'"):
        health.predictions_from_answers(demo_db, DATASET, "cheap", "nobody", "one-pass")
    with pytest.raises(health.HealthError, match="need a validate_negative batch of demo-hard-positives"):
        health.predictions_from_answers(demo_db, "demo-hard-positives", "cheap", "cheap", "one-pass")
    assert store.list_prediction_sets(demo_db, DATASET) == []


def test_the_leaderboard_on_valid_items_is_also_prediction_powered_for_runs_that_scored_every_item(demo_db, tmp_path):
    from foil_studio.analysis.models import demo_model_spec, load_model
    from foil_studio.analysis.prediction_powered import powered_valid_accuracy
    from foil_studio.analysis.scoring import score_dataset

    loaded = load_model(demo_model_spec(), device="cpu")
    score_dataset(demo_db, DATASET, loaded, run="clip")
    score_dataset(demo_db, DATASET, loaded, run="part", limit=20)
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "judge.jsonl", predictor_rows(demo_db)), "judge")
    sampled_and_answered(demo_db, budget=60)
    report = health.health_report(demo_db, DATASET, ["clip", "part"], n_boot=50, predictions="judge")
    (row,) = report["prediction_powered"]["leaderboard"]["runs"]
    assert report["prediction_powered"]["leaderboard"]["skipped"] == {}  # "part" never reached the board
    plain = next(r for r in report["leaderboard"]["runs"] if r["run"] == "clip")
    assert row["run"] == "clip" and row["plain"] == plain["valid"] and row["plain_interval"] == plain["valid_interval"]
    assert row["interval"][0] <= row["prediction_powered"] <= row["interval"][1] and row["worth_human_answers"] > 0
    assert row["worth_human_answers"] <= report["prediction_powered"]["overall"]["covers"]  # at most every item
    # the figures from the store: people's "valid" as 1, the predicted validity 1 - f, the run's credits
    sample = health.read_sample(demo_db, DATASET)
    f = store.get_predictions(demo_db, DATASET, "judge")
    credit = health.run_credits(demo_db, DATASET, "clip")
    decided = {
        c: sorted(i for i in sample.verdicts if sample.drawn[i] == c) for c in sorted(set(sample.drawn.values()))
    }
    found = powered_valid_accuracy(
        {c: [float(sample.verdicts[i] == "valid") for i in items] for c, items in decided.items()},
        {c: [1 - f[i] for i in items] for c, items in decided.items()},
        {c: [[credit[i]] for i in items] for c, items in decided.items()},
        {c: [1 - f[i] for i in sample.frame[c]] for c in decided},
        {c: [[credit[i]] for i in sample.frame[c]] for c in decided},
        ["clip"],
    )
    assert row["prediction_powered"] == round(100 * float(found.estimate[0]), 2)
    assert row["interval"] == [round(100 * float(found.low[0]), 2), round(100 * float(found.high[0]), 2)]
    from foil_studio.analysis.prediction_powered import worth_of_widths

    width, plain_width = np.diff(row["interval"])[0], np.diff(row["plain_interval"])[0]
    assert row["reported"] == ("prediction-powered" if width < plain_width else "plain")
    covers = report["prediction_powered"]["overall"]["covers"]
    assert row["worth_human_answers"] == round(worth_of_widths(len(sample.verdicts), plain_width, width, covers), 1)
    from foil_studio.annotate.health.powered import powered_leaderboard

    only_part = powered_leaderboard(demo_db, sample, f, {"runs": [{"run": "part"}]}, None)
    assert only_part == {"runs": [], "skipped": {"part": "did not score every item of the sampled categories"}}
    assert powered_leaderboard(demo_db, sample, f, {"runs": []}, None) is None
    assert powered_leaderboard(demo_db, sample, f, None, None) is None
    (shown,) = health.powered_leaderboard_table(report)
    low, high = row["interval"]
    assert f"clip {row['prediction_powered']:.2f}% (95% CI {low:.2f} to {high:.2f})" in report["methods"]
    assert shown["prediction-powered valid items % (95% CI)"].startswith(f"{row['prediction_powered']:.2f} (")
    assert "| clip |" in health.report_markdown(report).split("## Prediction-powered")[1]


def test_the_same_predictions_power_the_ambiguous_and_the_invalid_or_ambiguous_shares(demo_db, tmp_path):
    from foil_studio.analysis.prediction_powered import powered_stratified_share

    rng = np.random.default_rng(5)
    rows = [
        {"id": r["id"], "invalid": float(np.clip(0.7 * r["invalid"] + rng.normal(0.2, 0.1), 0, 1))}
        for r in frame_items(demo_db)
    ]
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "judge.jsonl", rows), "judge")
    drawn = health.plan_sample(demo_db, DATASET, 120)
    health.create_sample_batch(demo_db, drawn, ("ann-a", "ann-b", "ann-c"), overlap=3, name="health-1")
    simulate(demo_db, "health-1", accuracies=0.85, seed=2)
    report = health.health_report(demo_db, DATASET, predictions="judge")
    other = {row["key"]: row for row in report["prediction_powered"]["other_shares"]}
    assert list(other) == ["ambiguous_share", "invalid_or_ambiguous_share"]
    sample = health.read_sample(demo_db, DATASET)
    values = store.get_predictions(demo_db, DATASET, "judge")
    for key, counted in (("ambiguous_share", {"ambiguous"}), ("invalid_or_ambiguous_share", {"invalid", "ambiguous"})):
        decided = {c: sorted(i for i in sample.verdicts if sample.drawn[i] == c) for c in sorted(sample.frame)}
        reference = powered_stratified_share(
            {c: [sample.verdicts[i] in counted for i in items] for c, items in decided.items()},
            {c: [values[i] for i in items] for c, items in decided.items()},
            {c: [values[i] for i in sample.frame[c]] for c in decided},
        )
        assert other[key]["overall"]["prediction_powered"] == reference.powered.as_dict()
        assert other[key]["overall"]["plain"] == report["overall"][key]  # the plain share is the report's own
        assert len(other[key]["by_category"]) == len(decided)
    table = health.powered_other_table(report)
    assert [row["share"] for row in table] == ["ambiguous", "invalid or ambiguous"]
    assert "Powered by the same predictions, the ambiguous share is" in report["methods"]
    assert table[0]["prediction-powered % (95% CI)"] in health.report_markdown(report)


def test_a_pair_of_runs_gets_its_difference_prediction_powered_beside_the_plain_one(demo_db, tmp_path):
    from foil_studio.analysis.models import demo_model_spec, load_model
    from foil_studio.analysis.scoring import score_dataset

    score_dataset(demo_db, DATASET, load_model(demo_model_spec(), device="cpu"), run="clip")
    health.import_predictions(demo_db, DATASET, write_jsonl(tmp_path / "judge.jsonl", predictor_rows(demo_db)), "judge")
    sampled_and_answered(demo_db, budget=60)
    # a second run, right on a coin's toss
    dataset_id = store.get_dataset(demo_db, DATASET)["id"]
    coin = store.ensure_run(demo_db, dataset_id, "coin", run_type="scores", model="coin")
    rng = np.random.default_rng(0)
    items = [row["id"] for row in store.list_items(demo_db, dataset_id, limit=1 << 20)]
    store.put_scores(demo_db, coin, [(i, [0.3, 0.1] if rng.random() < 0.5 else [0.1, 0.3]) for i in items])
    report = health.health_report(demo_db, DATASET, ["clip", "coin"], n_boot=50, predictions="judge")
    (pair,) = report["prediction_powered"]["leaderboard"]["pairs"]
    (plain,) = report["leaderboard"]["pairs"]
    assert (pair["a"], pair["b"], pair["plain"], pair["plain_interval"]) == (
        plain["a"],
        plain["b"],
        plain["difference"],
        plain["interval"],
    )
    assert pair["interval"][0] <= pair["prediction_powered"] <= pair["interval"][1]
    (shown,) = health.powered_pairs_table(report)
    assert shown["pair"] == f"{pair['a']} - {pair['b']}"
    assert f"{pair['a']} minus {pair['b']} {pair['prediction_powered']:.2f} points" in report["methods"]
    assert shown["prediction-powered difference, points (95% CI)"] in health.report_markdown(report)


def test_each_pair_of_runs_is_its_difference_on_valid_items_beside_the_plain_one_in_percent():
    """`_powered_pairs` on a board of three pairs, one not computed (skipped, not the end): each row the
    prediction-powered difference and interval in percent to two decimals, reported where narrower,
    and its worth by the square-root rule up to the items there are; a board without pairs gives none."""
    from foil_studio.analysis.prediction_powered import PoweredAccuracy
    from foil_studio.annotate.health.powered import _powered_pairs

    no_runs = np.zeros(3)
    found = PoweredAccuracy(
        ["a", "b", "c"],
        no_runs,
        no_runs,
        no_runs,
        no_runs,
        {("a", "b"): (0.101234, -0.051234, 0.253456), ("a", "c"): (0.2, 0.101, 0.301)},
    )
    board = {
        "pairs": [
            {"a": "a", "b": "b", "difference": 10.5, "interval": [-10.0, 30.0]},
            {"a": "b", "b": "c", "difference": 1.0, "interval": [-5.0, 7.0]},
            {"a": "a", "b": "c", "difference": 20.0, "interval": [15.0, 25.0]},
        ]
    }
    narrower, wider = _powered_pairs(found, board, 40, 300)
    assert narrower == {
        "a": "a",
        "b": "b",
        "plain": 10.5,
        "plain_interval": [-10.0, 30.0],
        "prediction_powered": 10.12,
        "interval": [-5.12, 25.35],
        "reported": "prediction-powered",
        "worth_human_answers": round(40 * (40 / (25.35 + 5.12)) ** 2, 1),
    }
    assert (wider["a"], wider["b"], wider["interval"], wider["reported"]) == ("a", "c", [10.1, 30.1], "plain")
    assert wider["worth_human_answers"] == 40.0
    assert _powered_pairs(found, {"runs": []}, 40, 300) == []


def test_prediction_powered_shares_need_a_prediction_on_every_item_and_stand_on_decided_items(demo_db):
    """Before any answer there is nothing to estimate (no category, no overall figure, in every share);
    predictions that leave an item out are refused, saying how many and what to do."""
    drawn = health.plan_sample(demo_db, DATASET, 30)
    health.create_sample_batch(demo_db, drawn, ("ann-a", "ann-b"), overlap=2, name="health-1")
    sample = health.read_sample(demo_db, DATASET)
    flat = {item: 0.5 for item, _, _ in frame_items_with_sources(demo_db)}
    nothing = health.powered_shares(sample, flat, "flat")
    assert (nothing["predictions"], nothing["by_category"], nothing["overall"], nothing["leaderboard"]) == (
        "flat",
        [],
        None,
        None,
    )
    assert [(o["by_category"], o["overall"]) for o in nothing["other_shares"]] == [([], None), ([], None)]
    one_left = dict(list(flat.items())[1:])
    message = (
        f"the predictions 'flat' leave 1 item(s) of {DATASET} without a prediction (items were added after they "
        "were imported?): import them again for every item"
    )
    with pytest.raises(health.HealthError, match=f"^{re.escape(message)}$"):
        health.powered_shares(sample, one_left, "flat")


def test_predictions_for_a_dataset_with_nothing_to_validate_are_refused(demo_db, tmp_path):
    from foil_studio.data.formats.crepe import write_crepe_source
    from foil_studio.data.loading import import_path

    import_path(demo_db, "crepe", write_crepe_source(tmp_path / "crepe"), name="wino")
    with pytest.raises(health.HealthError) as refused:
        health.import_predictions(demo_db, "wino", write_jsonl(tmp_path / "p.jsonl", [{"id": "0", "invalid": 1}]), "p")
    assert (
        str(refused.value) == f"wino has no items with a negative to validate ({'/'.join(health.HEALTH_KINDS)} items)"
    )

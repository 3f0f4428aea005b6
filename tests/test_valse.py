"""VALSE with its crowd votes: every piece read, valid foils by the authors' rule, Fleiss' kappa
from the vote counts, images found flat or per source dataset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from statsmodels.stats.inter_rater import fleiss_kappa

from foil_studio.annotate.votes import vote_agreement
from foil_studio.cli import main
from foil_studio.data import store
from foil_studio.data.loading import import_path

PIECES = (
    "actant-swap",
    "action-replacement",
    "coreference-hard",
    "coreference-standard",
    "counting-adversarial",
    "counting-hard",
    "counting-small-quant",
    "existence",
    "foil-it",
    "plurals",
    "relations",
)


def raw_pieces(fixtures: Path) -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text()) for path in sorted((fixtures / "valse" / "data").glob("*.json"))}


def fleiss_by_hand(rows: list[list[int]]) -> float:
    """Fleiss (1971) from per-item vote counts, written out as the paper defines it."""
    n_items, raters = len(rows), sum(rows[0])
    shares = [sum(row[j] for row in rows) / (n_items * raters) for j in range(len(rows[0]))]
    agreement = sum((sum(c * c for c in row) - raters) / (raters * (raters - 1)) for row in rows) / n_items
    chance = sum(p * p for p in shares)
    return (agreement - chance) / (1 - chance)


def test_every_piece_is_read_with_its_valid_foils_counted_by_the_authors_rule(fresh_db, fixtures):
    report = import_path(fresh_db, "valse", fixtures / "valse" / "data")
    raw = raw_pieces(fixtures)
    assert tuple(report.by_category) == PIECES
    assert report.by_category == {piece: len(records) for piece, records in raw.items()}
    assert report.notes["valid_foils"] == {
        piece: sum(r["mturk"]["caption"] >= 2 for r in records.values()) for piece, records in raw.items()
    }
    assert report.notes["valid_foils"]["existence"] == 505 and report.notes["valid_foils"]["plurals"] == 851


def test_an_item_keeps_its_caption_foil_image_source_and_votes(fresh_db, fixtures):
    import_path(fresh_db, "valse", fixtures / "valse" / "data" / "existence.json")
    record = raw_pieces(fixtures)["existence"]["existence_visual7w_2371044"]
    item = next(
        i
        for i in store.list_items(fresh_db, store.get_dataset(fresh_db, "valse")["id"], limit=1000)
        if i["source_id"] == "existence/existence_visual7w_2371044"
    )
    assert item["captions"] == [record["caption"], record["foil"]] and item["images"] == [record["image_file"]]
    assert item["meta"]["votes"] == record["mturk"] and item["meta"]["source_dataset"] == "visual7w"
    assert item["truth"] == {"valid_foil": True}


def test_fleiss_kappa_of_the_votes_per_piece_matches_the_formula(fresh_db, fixtures):
    import_path(fresh_db, "valse", fixtures / "valse" / "data")
    report = vote_agreement(fresh_db, "valse")
    for piece, records in raw_pieces(fixtures).items():
        rows = [[r["mturk"]["caption"], r["mturk"]["foil"], r["mturk"]["other"]] for r in records.values()]
        assert report["by_category"][piece]["fleiss"] == pytest.approx(fleiss_by_hand(rows), abs=1e-9), piece
        assert report["by_category"][piece]["fleiss"] == pytest.approx(fleiss_kappa(np.array(rows)), abs=1e-12), piece
        assert report["by_category"][piece]["n"] == len(records)
    assert report["overall"]["n_valid"] == sum(report["by_category"][p]["n_valid"] for p in PIECES) == 7702


def test_images_are_found_flat_or_in_a_folder_per_source_dataset(fresh_db, tmp_path):
    records = {
        "1": {
            "dataset": "SWiG",
            "image_file": "jumping_1.jpg",
            "caption": "a man jumps",
            "foil": "a man sits",
            "mturk": {"caption": 3, "foil": 0, "other": 0},
        },
        "2": {
            "dataset": "coco2017",
            "image_file": "000000002.jpg",
            "caption": "two dogs",
            "foil": "one dog",
            "mturk": {"caption": 1, "foil": 2, "other": 0},
        },
    }
    data = tmp_path / "data"
    data.mkdir()
    (data / "mixed.json").write_text(json.dumps(records))
    images = tmp_path / "images"
    (images / "coco2017").mkdir(parents=True)
    Image.new("RGB", (4, 4)).save(images / "jumping_1.jpg")
    Image.new("RGB", (4, 4)).save(images / "coco2017" / "000000002.jpg")
    report = import_path(fresh_db, "valse", data, images=images)
    assert report.missing_images == 0 and report.notes["valid_foils"] == {"mixed": 1}
    stored = store.list_items(fresh_db, store.get_dataset(fresh_db, "valse")["id"])
    assert sorted(i["images"][0] for i in stored) == ["coco2017/000000002.jpg", "jumping_1.jpg"]


def test_the_cli_reports_valid_foils_on_import_and_kappa_per_piece(tmp_path, fixtures, capsys):
    db = str(tmp_path / "v.db")
    assert main(["import", "valse", str(fixtures / "valse" / "data" / "relations.json"), "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"]["valid_foils"] == {"relations": 535}
    assert main(["votes", "valse", "--db", db, "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["by_category"]["relations"]
    assert figures["n"] == 614 and figures["n_valid"] == 535 and -1 <= figures["fleiss"] <= 1


def scored_as_the_crowd_judged(db) -> None:
    """A run that prefers the caption exactly on the items the crowd validated (acc_r known)."""
    dataset = store.get_dataset(db, "valse")
    items = store.list_items(db, dataset["id"], limit=1 << 62)
    with store.transaction(db):
        run_id = store.ensure_run(db, dataset["id"], "crowd-like", run_type="scores", model="none")
        store.put_scores(db, run_id, [(i["id"], [0.3, 0.2] if i["truth"]["valid_foil"] else [0.2, 0.3]) for i in items])


def test_metrics_on_the_valid_subset_count_only_valid_foils(fresh_db, fixtures, tmp_path, capsys):
    from foil_studio.analysis.results import run_metrics

    import_path(fresh_db, "valse", fixtures / "valse" / "data")
    scored_as_the_crowd_judged(fresh_db)
    every = run_metrics(fresh_db, "valse", "crowd-like")
    valid = run_metrics(fresh_db, "valse", "crowd-like", subset="valid")
    assert every["n"] == 8782 and every["metrics"]["acc_r"] == pytest.approx(100 * 7702 / 8782)
    assert valid["n"] == 7702 and valid["metrics"]["acc_r"] == 100.0 and valid["subset"] == "valid"
    assert valid["by_category"]["existence"]["n"] == 505 and "subset" not in every


def test_the_valid_subset_exports_and_reads_back_with_only_valid_foils(fresh_db, fixtures, tmp_path):
    from foil_studio.analysis.exports import export_dataset

    import_path(fresh_db, "valse", fixtures / "valse" / "data" / "plurals.json")
    report = export_dataset(fresh_db, "valse", "valse", tmp_path / "out", subset="valid")
    written = json.loads((tmp_path / "out" / "plurals.json").read_text())
    assert report["n_items"] == len(written) == 851 and all(r["mturk"]["caption"] >= 2 for r in written.values())


def test_the_model_scores_page_offers_the_valid_subset(fresh_db, fixtures, tmp_path, monkeypatch, admin_page):
    db_file = tmp_path / "page.db"
    db = store.open_db(db_file)
    import_path(db, "valse", fixtures / "valse" / "data" / "existence.json")
    scored_as_the_crowd_judged(db)
    at = admin_page(db_file, "views/model_scores.py")
    subset = next(r for r in at.radio if r.options == ["all", "valid"])
    subset.set_value("valid").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "category" in d.value.columns)
    assert table.set_index("category").loc["(all)", "n"] == 505

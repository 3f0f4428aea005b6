"""Every benchmark format: the README's import table is the registry's, and what a writer writes
its reader reads back as the same items (captions, categories, images, boxes, truth)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from analysis.exports import export_dataset
from data import formats, store
from data.loading import import_path
from tests.conftest import REPO
from tests.test_benchmarks import whatsup_folder, winoground_folder


def test_the_readme_import_table_is_the_registry():
    assert formats.import_table() in (REPO / "README.md").read_text()


def test_every_import_kind_is_offered_by_the_cli_and_the_datasets_form():
    from cli import build_parser

    choices = next(a.choices for a in build_parser()._subparsers._group_actions[0].choices["import"]._actions if a.dest == "kind")
    assert tuple(choices) == formats.IMPORT_KINDS
    assert "formats.IMPORT_KINDS" in (REPO / "views" / "datasets.py").read_text()


def write_aro(folder: Path) -> Path:
    records = [
        {"image_id": "7", "image_path": "7.jpg", "bbox_x": 1, "bbox_y": 2, "bbox_w": 30, "bbox_h": 40,
         "true_caption": "the horse is eating the grass", "false_caption": "the grass is eating the horse", "relation_name": "eating"},
        {"image_id": "8", "image_path": "8.jpg", "bbox_x": 0, "bbox_y": 0, "bbox_w": 5.5, "bbox_h": 6,
         "true_caption": "the paved road and the white house", "false_caption": "the white road and the paved house", "attributes": ["paved", "white"]},
    ]
    path = folder / "visual_genome_mixed.json"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records))
    return path


def write_crepe(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "prod_vg_hard_negs_swap_complexity_4.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image_id", "caption", "x", "y", "width", "height", "hard_negs"])
        writer.writerow(["11", "a dog on a red mat", "0", "1", "50", "60", "['a mat on a red dog', 'a red dog on a mat']"])
        writer.writerow(["12", "a cup left of a plate", "3", "4", "20", "20", "['a plate left of a cup']"])
    with (folder / "syst_vg_hard_negs_unseen_compounds_in_cc12m.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image_id", "caption", "x", "y", "width", "height", "valid_hard_negs_atom", "valid_hard_negs_comp"])
        writer.writerow(["13", "a tall man", "0", "0", "9", "9", "['a short man']", "['a tall woman', 'a small man']"])
        writer.writerow(["14", "a wet road", "0", "0", "9", "9", "[]", "['a dry road']"])
    return folder


def sources(fixtures: Path, tmp_path: Path) -> dict[str, Path]:
    return {
        "sugarcrepe": fixtures / "sugarcrepe" / "data" / "swap_att.json",
        "hard-positives": fixtures / "hard_positives",
        "aro": write_aro(tmp_path / "aro"),
        "crepe": write_crepe(tmp_path / "crepe"),
        "jsonl": write_jsonl(tmp_path / "mine.jsonl"),
        "valse": fixtures / "valse" / "data" / "existence.json",
        "sugarcrepe-pp": fixtures / "sugarcrepe_pp" / "data" / "swap_att.json",
        "winoground": winoground_folder(tmp_path / "winoground") / "examples.jsonl",
        "whatsup": whatsup_folder(tmp_path / "whatsup") / "data",
    }


def write_jsonl(path: Path) -> Path:
    records = [
        {"kind": "pair", "category": "swap_att", "id": "1", "captions": ["a red cube", "a blue cube"], "images": ["1.jpg"], "truth": {"negative": "false"}},
        {"kind": "triple", "category": "rel", "id": "2", "captions": ["a on b", "b on a", "b under a"], "images": ["2.jpg"], "meta": {"bbox": [1, 2, 3, 4]}},
        {"kind": "paraphrase", "category": "swap_obj", "id": "6", "captions": ["a on b", "b on a", "b is under a"], "images": ["6.jpg"]},
        {"kind": "group", "category": "replace_obj", "id": "3", "captions": ["a cat", "a dog"], "images": ["3a.jpg", "3b.jpg"]},
        {"kind": "retrieval", "category": "prod_swap_c04", "id": "4", "captions": ["x y", "y x", "x x"], "images": ["4.jpg"]},
        {"kind": "candidates", "category": "replace_att", "id": "5", "captions": ["a green bus"], "images": ["5a.png", "5b.png", "5c.png"],
         "truth": {"valid": [False, True, True], "best": 1}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def item_content(db, dataset: str) -> list[tuple]:
    """What a user would call the items: everything but store ids, in a fixed order."""
    rows = store.list_items(db, store.get_dataset(db, dataset)["id"], limit=1 << 62)
    return sorted((r["kind"], r["category"], tuple(r["captions"]), tuple(r["images"]), json.dumps(r["truth"], sort_keys=True),
                   json.dumps(r["meta"].get("bbox"))) for r in rows)


ROUND_TRIPS = [name for name, f in formats.REGISTRY.items() if f.read is not None and f.write is not None and name != "bivlc"]


@pytest.mark.parametrize("name", ROUND_TRIPS)
def test_a_written_benchmark_reads_back_as_the_same_items(name, fresh_db, fixtures, tmp_path):
    source = sources(fixtures, tmp_path).get(name)
    if source is None or not source.exists():
        pytest.fail(f"add a source file for the {name} round trip")
    import_path(fresh_db, name, source, name="first")
    export_dataset(fresh_db, "first", name, tmp_path / "written")
    written = next((tmp_path / "written").glob("*.jsonl")) if name == "jsonl" else tmp_path / "written"
    import_path(fresh_db, name, written, name="second")
    assert item_content(fresh_db, "second") == item_content(fresh_db, "first") and item_content(fresh_db, "first")


def test_a_written_bivlc_reads_back_with_its_images(fresh_db, tmp_path):
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    rows = []
    for n in range(3):
        for side in ("pos", "neg"):
            Image.new("RGB", (8, 8), (40 * n, 100 if side == "pos" else 200, 0)).save(images / f"{n}_{side}.png")
        rows.append({"caption": f"a dog {n} on a mat", "negative_caption": f"a mat {n} on a dog", "type": "swap", "subtype": "obj",
                     "image": f"{n}_pos.png", "negative_image": f"{n}_neg.png"})
    source = tmp_path / "bivlc.csv"
    with source.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    import_path(fresh_db, "bivlc", source, images=images, name="first")
    export_dataset(fresh_db, "first", "bivlc", tmp_path / "written")
    report = import_path(fresh_db, "bivlc", tmp_path / "written" / "bivlc.csv", images=tmp_path / "written", name="second")
    assert report.missing_images == 0
    first = [(k, c, cap) for k, c, cap, *_ in item_content(fresh_db, "first")]
    assert [(k, c, cap) for k, c, cap, *_ in item_content(fresh_db, "second")] == first and len(first) == 3

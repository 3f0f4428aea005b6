"""Importers on the real benchmark files, idempotence, differences between versions, bad input."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from foil_studio.data import store
from foil_studio.data.formats import BadInputError
from foil_studio.data.formats.gpt4v import parse_choice
from foil_studio.data.loading import import_path

SUGARCREPE_COUNTS = {
    "add_att": 692,
    "add_obj": 2062,
    "replace_att": 788,
    "replace_obj": 1652,
    "replace_rel": 1406,
    "swap_att": 666,
    "swap_obj": 245,
}
BIVLC_COUNTS = {
    "add_att": 76,
    "add_obj": 399,
    "replace_att": 437,
    "replace_obj": 1200,
    "replace_rel": 462,
    "swap_att": 278,
    "swap_obj": 81,
}


def test_sugarcrepe_counts_per_category(fresh_db, fixtures):
    report = import_path(fresh_db, "sugarcrepe", fixtures / "sugarcrepe" / "data")
    assert report.by_category == SUGARCREPE_COUNTS
    assert report.n_items == report.n_new_items == 7511
    assert report.missing_images == 1560  # distinct COCO file names across the seven files; no image folder given


def test_reimport_adds_nothing(fresh_db, fixtures):
    first = import_path(fresh_db, "sugarcrepe", fixtures / "sugarcrepe" / "data")
    second = import_path(fresh_db, "sugarcrepe", fixtures / "sugarcrepe" / "data")
    assert (first.n_new_items, second.n_new_items) == (7511, 0)
    assert store.count_items(fresh_db, store.get_dataset(fresh_db, "sugarcrepe")["id"]) == 7511


def test_unrefined_sugarcrepe_is_larger(fresh_db, fixtures):
    report = import_path(fresh_db, "sugarcrepe", fixtures / "sugarcrepe" / "data_unrefined", name="unrefined")
    refined = SUGARCREPE_COUNTS
    assert set(report.by_category) == set(refined)
    assert all(report.by_category[c] > refined[c] for c in refined)
    # one item per record of each file, counted by the json module alone
    records = {
        path.stem: len(json.loads(path.read_text()))
        for path in (fixtures / "sugarcrepe" / "data_unrefined").glob("*.json")
    }
    assert (
        dict(report.by_category)
        == records
        == {
            "add_att": 1789,
            "add_obj": 3967,
            "replace_att": 1703,
            "replace_obj": 3124,
            "replace_rel": 3177,
            "swap_att": 2305,
            "swap_obj": 1413,
        }
    )


def test_bivlc_per_instance_file_names_the_item_sugarcrepe_removed(fresh_db, fixtures):
    import_path(fresh_db, "sugarcrepe", fixtures / "sugarcrepe" / "data")
    report = import_path(
        fresh_db, "sugarcrepe-correct", fixtures / "bivlc" / "results" / "SUGARCREPE_CORRECT_ViT-B-32.csv"
    )
    assert report.run == "ViT-B-32"
    assert report.n_items == 7512 and report.n_new_items == 1
    assert report.by_category["swap_obj"] == 246
    added = [w for w in report.warnings if "not in the dataset before" in w["message"]]
    assert len(added) == 1 and "Korea Way" in added[0]["message"] and added[0]["row"] > 1


def test_sugarcrepe_correct_creates_items_when_absent(fresh_db, fixtures):
    report = import_path(
        fresh_db, "sugarcrepe-correct", fixtures / "bivlc" / "results" / "SUGARCREPE_CORRECT_CLIP_COCO.csv"
    )
    assert report.n_new_items == 7512
    runs = store.list_runs(fresh_db, "sugarcrepe")
    assert runs == [
        {
            "run": "CLIP_COCO",
            "dataset": "sugarcrepe",
            "model": "CLIP_COCO",
            "pretrained": None,
            "run_type": "correct",
            "precision": None,
            "n_items": 7512,
        }
    ]  # imported: no precision


def test_bivlc_results_are_2933_groups_and_runs_share_items(fresh_db, fixtures):
    results = fixtures / "bivlc" / "results"
    first = import_path(fresh_db, "bivlc-results", results / "BiVLC_ViT-B-32.csv")
    second = import_path(fresh_db, "bivlc-results", results / "BiVLC_CLIP_COCO.csv")
    assert first.n_items == 2933 and first.by_category == BIVLC_COUNTS
    assert second.n_new_items == 0
    assert [r["run"] for r in store.list_runs(fresh_db, "bivlc")] == ["ViT-B-32", "CLIP_COCO"]
    outcomes = store.run_outcomes(fresh_db, 1)
    first_outcome = outcomes[min(outcomes)]
    assert set(first_outcome) == {"ipos2t", "ineg2t", "tpos2i", "tneg2i", "i2t", "t2i", "group"}
    assert all(o["group"] == (o["i2t"] and o["t2i"]) for o in outcomes.values())


def test_bivlc_candidates(fresh_db, fixtures):
    report = import_path(fresh_db, "bivlc-candidates", fixtures / "bivlc" / "BiVLC_negative_imgs.csv")
    assert report.n_items == 7512 and report.by_category["swap_obj"] == 246
    item = _all_items(fresh_db, "bivlc-candidates")[0]
    assert item["kind"] == "candidates" and len(item["images"]) == 4
    assert item["meta"]["source_image"] == "000000219578.jpg"


def test_hard_positives_join_row_by_row(fresh_db, fixtures):
    report = import_path(fresh_db, "hard-positives", fixtures / "hard_positives")
    assert report.by_category == {"vl_checklist_attributes": 10575, "vl_checklist_relations": 16868}
    first = _all_items(fresh_db, "hard-positives")[0]
    assert first["captions"] == ["walking elephant", "jumping elephant", "strolling elephant"]


def test_gpt4v_answers_with_both_orderings(fresh_db, fixtures):
    report = import_path(fresh_db, "gpt4v", fixtures / "sugarcrepe" / "gpt4v")
    assert report.by_category["swap_obj"] == 246 and report.n_items == 7512
    skipped = [w for w in report.warnings if "non-item key" in w["message"]]
    assert [w["row"] for w in skipped] == ["accuracy"]
    outcomes = list(store.run_outcomes(fresh_db, 1).values())
    assert all(set(o) == {"positive-first", "negative-first"} for o in outcomes)
    answers = [o[k] for o in outcomes for k in o]
    unparsed = [a for a in answers if not a["parsed"]]
    assert 250 < len(unparsed) < 320  # "Neither ..." answers and refusals, kept and counted as wrong
    assert not any(a["correct"] for a in unparsed)
    # Where our reading and the authors' judgement differ, the import says so, row by row:
    # a bare "1"/"2" the authors marked wrong, or a "Neither..." answer they marked right.
    disagreements = [a for a in answers if a["correct"] != a["reported_correct"]]
    flagged = [w for w in report.warnings if "the authors judged it" in w["message"]]
    assert len(flagged) == len(disagreements) == 16
    assert all(a["answer"].strip() in ("1", "2") or not a["parsed"] for a in disagreements)


@pytest.mark.parametrize(
    ("answer", "choice"),
    [
        ("(1)", 1),
        ("(2) ", 2),
        ("Output (1).", 1),
        ("Output (2)", 2),
        ("1", 1),
        ("(2) A dog and a cat curled up", 2),
        ("Neither (1) nor (2).", None),
        ("The correct caption is:\n(2) A street sign.", 2),
        ("Neither caption is accurate. However, caption (1) is closer.", None),
        ("I'm sorry, I can't assist with that request.", None),
        ("", None),
    ],
)
def test_free_form_answers(answer, choice):
    assert parse_choice(answer) == choice


# --- images -----------------------------------------------------------------------------------


def _png(size=(8, 8), colour=(200, 10, 10)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _write_sugarcrepe(folder: Path, records: dict, category: str = "replace_obj") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{category}.json").write_text(json.dumps(records))
    return folder


def test_images_are_hashed_and_missing_or_truncated_ones_counted(fresh_db, tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    (images / "good.png").write_bytes(_png())
    (images / "broken.png").write_bytes(_png()[:40])
    records = {
        str(i): {"filename": name, "caption": f"a red square {i}", "negative_caption": f"a blue square {i}"}
        for i, name in enumerate(["good.png", "broken.png", "absent.png"])
    }
    report = import_path(fresh_db, "sugarcrepe", _write_sugarcrepe(tmp_path / "data", records), images=images)
    assert report.missing_images == 2
    rows = {r["path"]: r for r in fresh_db.query("SELECT * FROM images")}
    assert rows["good.png"]["status"] == "ok" and len(rows["good.png"]["sha256"]) == 64
    assert (rows["good.png"]["width"], rows["good.png"]["height"]) == (8, 8)
    assert rows["broken.png"]["status"] == "unreadable"
    assert rows["absent.png"]["status"] == "missing"


@pytest.mark.parametrize("bad_path", ["../secret.jpg", "/etc/passwd", "a/../../b.jpg"])
def test_paths_escaping_the_image_root_are_refused(fresh_db, tmp_path, bad_path):
    records = {
        "0": {"filename": "ok.jpg", "caption": "a cat", "negative_caption": "a dog"},
        "1": {"filename": bad_path, "caption": "a cow", "negative_caption": "a pig"},
    }
    with pytest.raises(BadInputError) as error:
        import_path(fresh_db, "sugarcrepe", _write_sugarcrepe(tmp_path / "data", records), images=tmp_path)
    assert "row 1" in str(error.value) and "leaves the image root" in str(error.value)
    assert store.list_datasets(fresh_db) == []


def test_symlink_out_of_the_root_is_refused(tmp_path):
    from foil_studio.data.images import UnsafeImagePathError, resolve_image

    (tmp_path / "root").mkdir()
    (tmp_path / "outside.png").write_bytes(_png())
    (tmp_path / "root" / "link.png").symlink_to(tmp_path / "outside.png")
    with pytest.raises(UnsafeImagePathError):
        resolve_image(tmp_path / "root", "link.png")


# --- bad input --------------------------------------------------------------------------------


def test_malformed_json_names_file_and_line(fresh_db, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "add_att.json").write_text('{"0": {"filename": "a.jpg",\n "caption": "x" "negative_caption": "y"}}')
    with pytest.raises(BadInputError) as error:
        import_path(fresh_db, "sugarcrepe", folder)
    assert "add_att.json" in str(error.value) and "row 2" in str(error.value) and "malformed JSON" in str(error.value)


def test_a_bad_file_leaves_nothing_half_written(fresh_db, tmp_path):
    good = {"0": {"filename": "a.jpg", "caption": "a cat", "negative_caption": "a dog"}}
    folder = _write_sugarcrepe(tmp_path / "data", good, "add_att")
    (folder / "swap_att.json").write_text(json.dumps({"7": {"filename": "b.jpg", "caption": "a cow"}}))
    with pytest.raises(BadInputError) as error:
        import_path(fresh_db, "sugarcrepe", folder)
    assert "swap_att.json, row 7" in str(error.value) and "negative_caption" in str(error.value)
    assert fresh_db.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0
    assert store.list_datasets(fresh_db) == []


def test_missing_csv_columns_are_named(fresh_db, tmp_path):
    csv_file = tmp_path / "SUGARCREPE_CORRECT_x.csv"
    csv_file.write_text("filename,caption,negative_caption,type\na.jpg,a cat,a dog,add\n")
    with pytest.raises(BadInputError) as error:
        import_path(fresh_db, "sugarcrepe-correct", csv_file)
    assert "row 1" in str(error.value) and "'subtype'" in str(error.value) and "'correct'" in str(error.value)


def test_bad_boolean_names_row_and_column(fresh_db, tmp_path):
    csv_file = tmp_path / "SUGARCREPE_CORRECT_x.csv"
    csv_file.write_text(
        "filename,caption,negative_caption,type,subtype,correct\n"
        "a.jpg,a cat,a dog,add,obj,1\nb.jpg,a cow,a pig,add,obj,maybe\n"
    )
    with pytest.raises(BadInputError) as error:
        import_path(fresh_db, "sugarcrepe-correct", csv_file)
    assert "row 3" in str(error.value) and "'correct'" in str(error.value)


def test_misaligned_hard_positive_files_are_refused(fresh_db, fixtures, tmp_path):
    shutil.copytree(fixtures / "hard_positives", tmp_path / "hp")
    swapped_file = tmp_path / "hp" / "swapped_data" / "vl_checklist_attributes.json"
    rows = json.loads(swapped_file.read_text())
    del rows[100]
    swapped_file.write_text(json.dumps(rows))
    with pytest.raises(BadInputError) as error:
        import_path(fresh_db, "hard-positives", tmp_path / "hp")
    assert "misaligned" in str(error.value)
    rows.append(rows[0])  # same length again, but shifted from row 101 on
    swapped_file.write_text(json.dumps(rows))
    with pytest.raises(BadInputError) as error:
        import_path(fresh_db, "hard-positives", tmp_path / "hp")
    assert "row 101" in str(error.value) and "misaligned" in str(error.value)
    assert store.list_datasets(fresh_db) == []


# --- BiVLC instances, ARO, jsonl ----------------------------------------------------------------


def test_bivlc_parquet_with_embedded_images(fresh_db, tmp_path):
    frame = pd.DataFrame(
        [
            {
                "image": {"bytes": _png(colour=(0, 0, 255)), "path": "a.png"},
                "caption": "a blue square",
                "negative_image": {"bytes": _png(colour=(255, 0, 0)), "path": "b.png"},
                "negative_caption": "a red square",
                "type": "replace",
                "subtype": "att",
            },
        ]
    )
    frame.to_parquet(tmp_path / "test.parquet")
    report = import_path(fresh_db, "bivlc", tmp_path / "test.parquet", embedded_root=tmp_path / "store_files")
    assert report.n_items == 1 and report.missing_images == 0 and report.by_category == {"replace_att": 1}
    item = _all_items(fresh_db, "bivlc")[0]
    assert item["kind"] == "group" and all((tmp_path / "store_files" / p).is_file() for p in item["images"])


def test_bivlc_csv_fills_images_of_items_made_from_results(fresh_db, fixtures, tmp_path):
    import_path(fresh_db, "bivlc-results", fixtures / "bivlc" / "results" / "BiVLC_ViT-B-32.csv")
    source = pd.read_csv(fixtures / "bivlc" / "results" / "BiVLC_ViT-B-32.csv", dtype=str, keep_default_na=False)
    frame = source[["caption", "negative_caption", "type", "subtype"]].head(3).copy()
    frame["image"] = ["i0_a.jpg", "i0_b.jpg", "i0_c.jpg"]
    frame["negative_image"] = ["i1_a.jpg", "i1_b.jpg", "i1_c.jpg"]
    frame.to_csv(tmp_path / "bivlc.csv", index=False)
    report = import_path(fresh_db, "bivlc", tmp_path / "bivlc.csv", images=tmp_path)
    assert report.n_new_items == 0
    items = _all_items(fresh_db, "bivlc")
    assert len(items) == 2933 and items[0]["images"] == ["i0_a.jpg", "i1_a.jpg"]


def test_aro_relation_and_attribution(fresh_db, tmp_path):
    relation = [
        {
            "image_id": "1",
            "relation_name": "on",
            "bbox_x": 1,
            "bbox_y": 2,
            "bbox_w": 30,
            "bbox_h": 40,
            "true_caption": "the cup is on the table",
            "false_caption": "the table is on the cup",
            "image_path": "1.jpg",
        }
    ]
    attribution = [
        {
            "image_id": "2",
            "attributes": ["red", "wooden"],
            "bbox_x": 0,
            "bbox_y": 0,
            "bbox_w": 9,
            "bbox_h": 9,
            "true_caption": "the red cup and the wooden table",
            "false_caption": "the wooden cup and the red table",
            "image_path": "2.jpg",
        }
    ]
    (tmp_path / "visual_genome_relation.json").write_text(json.dumps(relation))
    (tmp_path / "visual_genome_attribution.json").write_text(json.dumps(attribution))
    report = import_path(fresh_db, "aro", tmp_path)
    assert report.by_category == {"on": 1, "red_wooden": 1}
    meta = {i["category"]: i["meta"]["bbox"] for i in _all_items(fresh_db, "aro")}
    assert meta["on"] == [1.0, 2.0, 30.0, 40.0]
    bad = [dict(relation[0], bbox_w="wide")]
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "visual_genome_relation.json").write_text(json.dumps(bad))
    with pytest.raises(BadInputError, match="row 1.*bbox"):
        import_path(fresh_db, "aro", tmp_path / "bad", name="aro-bad")


def test_jsonl_generic_format(fresh_db, tmp_path):
    lines = [
        {
            "kind": "retrieval",
            "category": "hn_atom",
            "id": "r1",
            "captions": ["a cat", "a dog", "a cow"],
            "images": ["x.jpg"],
        },
        {
            "kind": "triple",
            "category": "replace_att",
            "captions": ["a", "b", "c"],
            "images": ["y.jpg"],
            "truth": {"k": 1},
        },
        {"kind": "pair", "category": "add_obj", "captions": ["only one"], "images": []},
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    with pytest.raises(BadInputError, match="row 3: a pair needs 2 captions"):
        import_path(fresh_db, "jsonl", path)
    path.write_text("\n".join(json.dumps(line) for line in lines[:2]))
    report = import_path(fresh_db, "jsonl", path)
    assert report.dataset == "mine" and report.by_category == {"hn_atom": 1, "replace_att": 1}


def _all_items(db, dataset: str) -> list[dict]:
    dataset_id = store.get_dataset(db, dataset)["id"]
    return store.list_items(db, dataset_id, limit=1_000_000)


def test_large_images_get_a_cached_thumbnail(tmp_path):
    from foil_studio.data.images import thumbnail

    big = tmp_path / "big.png"
    Image.new("RGB", (1200, 800), (10, 200, 10)).save(big)
    small = tmp_path / "small.png"
    Image.new("RGB", (64, 64)).save(small)
    first = thumbnail(big, tmp_path / "thumbs")
    assert first != big and max(Image.open(first).size) == 448
    made_at = first.stat().st_mtime_ns
    assert thumbnail(big, tmp_path / "thumbs") == first and first.stat().st_mtime_ns == made_at  # reused, not redrawn
    assert thumbnail(small, tmp_path / "thumbs") == small
    Image.new("RGB", (1200, 900), (200, 10, 10)).save(big)  # the image edited while the app runs
    edited = thumbnail(big, tmp_path / "thumbs")
    assert edited != first and Image.open(edited).getpixel((5, 5))[0] > 150  # not the remembered green one
    for made in (tmp_path / "thumbs").iterdir():
        made.unlink()  # the cache folder emptied under a running app
    assert thumbnail(big, tmp_path / "thumbs") == edited and edited.is_file()


def _write_crepe(folder: Path) -> Path:
    """A small CREPE tree in the repository's layout: productivity and systematicity CSVs."""
    (folder / "prod_hard_negatives" / "swap").mkdir(parents=True)
    (folder / "syst_hard_negatives").mkdir(parents=True)
    box = {"x": 10, "y": 20, "width": 30, "height": 40}
    prod = pd.DataFrame(
        [
            {
                "image_id": 2400001,
                "caption": "a man on a red horse",
                **box,
                "hard_negs": str(
                    [
                        "a horse on a red man",
                        "a red man on a horse",
                        "a man on a horse red",
                        "man a on a red horse",
                        "a red horse on a man",
                    ]
                ),
            },
            {
                "image_id": 2400002,
                "caption": "a cup left of a plate",
                **box,
                "hard_negs": str(
                    [
                        "a plate left of a cup",
                        "a left cup of a plate",
                        "a cup of a left plate",
                        "cup a left of a plate",
                        "a plate of a left cup",
                    ]
                ),
            },
        ]
    )
    prod.to_csv(folder / "prod_hard_negatives" / "swap" / "prod_vg_hard_negs_swap_complexity_4.csv", index=False)
    syst = pd.DataFrame(
        [
            {
                "image_id": 2400001,
                "caption": "a black dog",
                **box,
                "valid_hard_negs_atom": str(["a white dog", "a black cat"]),
                "valid_hard_negs_comp": str(["a black cat and a white dog", "a white dog", "a black bird"]),
            },
            {
                "image_id": 2400003,
                "caption": "a tall tree",
                **box,
                "valid_hard_negs_atom": str(["a short tree"]),
                "valid_hard_negs_comp": "[]",
            },
        ]
    )
    syst.to_csv(folder / "syst_hard_negatives" / "syst_vg_hard_negs_unseen_compounds_in_laion.csv", index=False)
    return folder


def test_crepe_retrieval_sets_in_the_repository_layout(fresh_db, tmp_path):
    images = tmp_path / "vg"
    images.mkdir()
    for image_id in (2400001, 2400002):
        Image.new("RGB", (64, 64), "gray").save(images / f"{image_id}.jpg")
    report = import_path(fresh_db, "crepe", _write_crepe(tmp_path / "crepe"), images=images)
    assert report.by_category == {"prod_swap_c04": 2, "syst_atom_unseen": 2, "syst_comp_unseen": 1}
    assert report.missing_images == 1  # 2400003.jpg is not in the folder
    assert [(w["row"], w["message"]) for w in report.warnings] == [
        (3, "no valid_hard_negs_comp: this row has no comp retrieval set")
    ]
    items = {i["source_id"]: i for i in _all_items(fresh_db, "crepe")}
    first = items["prod_vg_hard_negs_swap_complexity_4/2/swap"]
    assert (
        first["kind"] == "retrieval" and len(first["captions"]) == 6 and first["captions"][0] == "a man on a red horse"
    )
    assert first["meta"]["bbox"] == [10.0, 20.0, 30.0, 40.0] and first["meta"]["complexity"] == 4
    assert len(items["syst_vg_hard_negs_unseen_compounds_in_laion/2/comp"]["captions"]) == 4  # sets differ in size


def test_crepe_bad_negatives_name_the_file_and_row(fresh_db, tmp_path):
    folder = _write_crepe(tmp_path / "crepe")
    path = folder / "prod_hard_negatives" / "swap" / "prod_vg_hard_negs_swap_complexity_4.csv"
    table = pd.read_csv(path)
    table.loc[1, "hard_negs"] = "a plate left of a cup"  # a bare string, not a list
    table.to_csv(path, index=False)
    with pytest.raises(
        BadInputError,
        match=r"prod_vg_hard_negs_swap_complexity_4.csv, row 3: column 'hard_negs' .* expected a list of captions",
    ):
        import_path(fresh_db, "crepe", folder)
    assert store.list_datasets(fresh_db) == []  # nothing half-imported
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "notes.csv").write_text("a,b\n1,2\n")
    with pytest.raises(BadInputError, match="no CREPE files here"):
        import_path(fresh_db, "crepe", tmp_path / "elsewhere")


def test_crepe_sets_of_different_sizes_score_and_rank(fresh_db, tmp_path):
    from foil_studio.analysis.models import ModelSpec, load_model
    from foil_studio.analysis.results import run_metrics
    from foil_studio.analysis.scoring import score_dataset

    images = tmp_path / "vg"
    images.mkdir()
    for number, image_id in enumerate((2400001, 2400002, 2400003)):
        Image.new("RGB", (64, 64), (40 * number, 90, 160)).save(images / f"{image_id}.jpg")
    import_path(fresh_db, "crepe", _write_crepe(tmp_path / "crepe"), images=images)
    score_dataset(fresh_db, "crepe", load_model(ModelSpec("foil-demo-clip", "none"), device="cpu"), run="random")
    result = run_metrics(fresh_db, "crepe", "random", n_boot=10)
    assert result["n"] == 5 and set(result["by_category"]) == {"prod_swap_c04", "syst_atom_unseen", "syst_comp_unseen"}
    # at most three captions in a systematicity atom set: the caption is always in the top 3,
    # so the padding of the shorter set never outranks it
    assert result["by_category"]["syst_atom_unseen"]["recall_at_3"] == 100.0

"""Benchmarks as the `datasets` library saves them (`import hf`), and training tables from validated
negatives (`export --format negclip-csv`)."""

from __future__ import annotations

import ast
import io
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from foil_studio import api
from foil_studio.annotate import batches
from foil_studio.annotate.batches import BatchError
from foil_studio.annotate.export import export_negclip
from foil_studio.annotate.simulation import simulate
from foil_studio.data import paths, store

datasets = pytest.importorskip("datasets")  # the tests build the local copies with the library itself

# The Hugging Face copy's split names (Aman-J/SugarCrepe_pp), `swap_atribute` as spelt there.
HF_SPLITS = {
    "replace_att": "replace_attribute",
    "replace_obj": "replace_object",
    "replace_rel": "replace_relation",
    "swap_att": "swap_atribute",
    "swap_obj": "swap_object",
}
ITEM_FIELDS = ["kind", "category", "source_id", "captions", "images", "truth", "meta"]


@pytest.fixture(scope="module")
def hf_copy(tmp_path_factory, fixtures):
    """SugarCrepe++ as the Hub holds it, saved by `datasets` both ways: save_to_disk and parquet shards."""
    folder = tmp_path_factory.mktemp("hf")
    source = fixtures / "sugarcrepe_pp" / "data"
    copy = datasets.DatasetDict(
        {
            HF_SPLITS[f.stem]: datasets.Dataset.from_list(json.loads(f.read_text()))
            for f in sorted(source.glob("*.json"))
        }
    )
    copy.save_to_disk(str(folder / "saved"))
    for split, part in copy.items():
        part.to_parquet(str(folder / "parquet" / "data" / f"{split}-00000-of-00001.parquet"))
    return folder


def stored_items(db_file: Path, dataset: str) -> pd.DataFrame:
    return api.open_store(db_file).items(dataset)[ITEM_FIELDS].sort_values("source_id", ignore_index=True)


@pytest.mark.parametrize("layout", ["saved", "parquet", "one split file"])
def test_a_saved_hugging_face_copy_imports_as_the_same_items_as_the_repository_files(
    layout, hf_copy, fixtures, tmp_path
):
    path = {
        "saved": hf_copy / "saved",
        "parquet": hf_copy / "parquet",
        "one split file": hf_copy / "saved" / "dataset_dict.json",
    }[layout]
    from_hf = api.open_store(tmp_path / "hf.db").import_file("hf", path)
    from_files = api.open_store(tmp_path / "files.db").import_file("sugarcrepe-pp", fixtures / "sugarcrepe_pp" / "data")
    assert from_hf["n_items"] == from_files["n_items"] == 4757
    assert from_hf["by_category"] == from_files["by_category"]
    pd.testing.assert_frame_equal(
        stored_items(tmp_path / "hf.db", "sugarcrepe-pp"), stored_items(tmp_path / "files.db", "sugarcrepe-pp")
    )
    # its items follow SugarCrepe++'s rules (metric names, strict ties): the dataset's source is that benchmark
    assert store.get_dataset(api.open_store(tmp_path / "hf.db").db, "sugarcrepe-pp")["source_kind"] == "sugarcrepe-pp"


def png(colour: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), colour).save(buffer, "PNG")
    return buffer.getvalue()


def test_images_embedded_in_the_copy_are_written_to_the_stores_files_folder(tmp_path):
    rows = [
        {
            "id": n,
            "image": {"bytes": png(colour), "path": f"{colour}.png"},
            "caption": f"a {colour} cup",
            "caption2": f"a cup that is {colour}",
            "negative_caption": f"a {other} cup",
        }
        for n, (colour, other) in enumerate([("red", "blue"), ("green", "white")])
    ]
    features = datasets.Features(
        {
            "id": datasets.Value("int64"),
            "image": datasets.Image(),
            "caption": datasets.Value("string"),
            "caption2": datasets.Value("string"),
            "negative_caption": datasets.Value("string"),
        }
    )
    datasets.DatasetDict({"swap_object": datasets.Dataset.from_list(rows, features=features)}).save_to_disk(
        str(tmp_path / "copy")
    )
    studio = api.open_store(tmp_path / "foil.db")
    report = studio.import_file("hf", tmp_path / "copy", name="tiny")
    assert report["n_items"] == 2 and report["missing_images"] == 0
    root = Path(store.get_dataset(studio.db, "tiny")["image_root"])
    assert root.is_relative_to(paths.files_dir(tmp_path / "foil.db"))
    items = studio.items("tiny").sort_values("source_id")
    written = [(root / images[0]).read_bytes() for images in items["images"]]
    assert written == [png("red"), png("green")]
    assert items["category"].tolist() == ["swap_obj", "swap_obj"]


def test_a_hub_id_is_refused_in_one_line_when_it_cannot_be_reached(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    studio = api.open_store(tmp_path / "foil.db")
    with pytest.raises(Exception, match="could not load from the Hub"):
        studio.import_file("hf", "no-such-org/no-such-dataset")
    assert studio.datasets().empty


# --- NegCLIP's training table --------------------------------------------------------------------


def majority_kept(db, batch_name: str) -> set[int]:
    """An independent reading of the keep rule: items where "the negative is wrong" has a strict majority."""
    votes: dict[int, Counter[str]] = {}
    for label in store.batch_labels(db, store.get_batch(db, batch_name)["id"]):
        votes.setdefault(label["item"], Counter())[label["answer"]["answer"]] += 1
    return {item for item, count in votes.items() if count["negative_false"] * 2 > sum(count.values())}


def read_negclip(folder: Path) -> pd.DataFrame:
    """The table as NegCLIP's CsvDataset reads it: tab-separated, list columns as Python literals."""
    return pd.read_csv(
        folder / "negclip.tsv", sep="\t", converters={"neg_caption": ast.literal_eval, "neg_image": ast.literal_eval}
    )


def test_negclip_rows_are_exactly_the_items_whose_negatives_were_validated(demo_db, tmp_path):
    dataset = "demo-sugarcrepe"
    spec = batches.BatchSpec(dataset, "validate_negative", ("ada", "ben", "cy"), overlap=3, n=40, name="first")
    first = batches.create_batch(demo_db, spec)["batch"]
    simulate(demo_db, first, accuracies=0.8, seed=1)
    kept = majority_kept(demo_db, first)
    assert 0 < len(kept) < 40  # some negatives kept, some dropped or unresolved: the rule is exercised

    report = export_negclip(demo_db, dataset, tmp_path / "one")
    table = read_negclip(tmp_path / "one")
    items = store.items_by_id(demo_db, kept)
    root = Path(store.get_dataset(demo_db, dataset)["image_root"])
    expected = sorted((str(root / i["images"][0]), i["captions"][0], [i["captions"][1]]) for i in items.values())
    assert sorted(zip(table["filepath"], table["title"], table["neg_caption"])) == expected
    assert report["n_rows"] == len(kept) and report["batches"] == [first]
    assert all(Path(p).is_file() for p in table["filepath"])
    for n, rows in enumerate(table["neg_image"]):
        assert rows and n not in rows or len(table) == 1
        assert all(0 <= m < len(table) for m in rows)

    # A second batch that finds a kept negative also true drops it: every batch that decided an item must keep it.
    dropped = min(kept)
    spec = batches.BatchSpec(dataset, "validate_negative", ("ada",), overlap=1, item_ids=(dropped,), name="again")
    second = batches.create_batch(demo_db, spec)["batch"]
    store.decide(demo_db, store.get_batch(demo_db, second)["id"], dropped, 0, {"answer": "negative_true"}, by="admin")
    export_negclip(demo_db, dataset, tmp_path / "two")
    assert len(read_negclip(tmp_path / "two")) == len(kept) - 1


def test_negclip_is_refused_without_validated_negatives(demo_db, tmp_path):
    with pytest.raises(BatchError, match="no validate_negative batch"):
        export_negclip(demo_db, "demo-sugarcrepe", tmp_path)
    assert not (tmp_path / "negclip.tsv").exists()

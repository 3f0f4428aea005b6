"""Benchmarks as the `datasets` library saves them (`import hf`), and training tables from validated
negatives (`export --format negclip-csv`)."""

from __future__ import annotations

import ast
import io
import json
import shutil
from collections import Counter
from fnmatch import fnmatch
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
    """SugarCrepe++ as the Hub holds it, written by `datasets` in each layout the library and the Hub write."""
    folder = tmp_path_factory.mktemp("hf")
    copy = scpp_splits(fixtures)
    copy.save_to_disk(str(folder / "saved"))
    for split, part in copy.items():
        part.to_parquet(str(folder / "parquet" / "data" / f"{split}-00000-of-00001.parquet"))
        # push_to_hub before datasets 2.15: splits in data/, the shard's fingerprint in its name
        push_to_hub_files(part, folder / "pushed_fingerprinted", "data", split, shards=1, fingerprinted=True)
        # push_to_hub(config_name=...), as on the Hub today: a folder per config holding its train split, two shards
        push_to_hub_files(part, folder / "pushed_configs", split, "train", shards=2)
        # the Hub's own parquet conversion (refs/convert/parquet)
        part.to_parquet(str(folder / "converted" / split / "train" / "0000.parquet"))
        # configs saved one by one (load_dataset(id, config).save_to_disk(config)): a train split each
        datasets.DatasetDict({"train": part}).save_to_disk(str(folder / "configs" / split))
    return folder


def scpp_splits(fixtures: Path) -> datasets.DatasetDict:
    """SugarCrepe++'s repository files as a `DatasetDict` named as on the Hub."""
    source = fixtures / "sugarcrepe_pp" / "data"
    return datasets.DatasetDict(
        {
            HF_SPLITS[f.stem]: datasets.Dataset.from_list(json.loads(f.read_text()))
            for f in sorted(source.glob("*.json"))
        }
    )


def push_to_hub_files(part, repo: Path, data_dir: str, split: str, *, shards: int, fingerprinted: bool = False):
    """The parquet files push_to_hub uploads for one split: its contiguous shards under the library's naming
    (`{data_dir}/{split}-00000-of-00002.parquet`; releases before 2.15 added `-{fingerprint}`)."""
    from datasets.arrow_dataset import PUSH_TO_HUB_WITHOUT_METADATA_CONFIGS_SPLIT_PATTERN_SHARDED as DATA_PATTERN

    for index in range(shards):
        shard = part.shard(num_shards=shards, index=index, contiguous=True)
        suffix = f"-{shard._fingerprint}" if fingerprinted else ""
        name = f"{data_dir}/{split}-{index:05d}-of-{shards:05d}{suffix}.parquet"
        # the patterns the library finds a split's files by: data/ without configs, {config}/{split}-* with them
        assert fnmatch(name, DATA_PATTERN.format(split=split) if data_dir == "data" else f"{data_dir}/{split}-*")
        shard.to_parquet(str(repo / name))


def stored_items(db_file: Path, dataset: str) -> pd.DataFrame:
    return api.open_store(db_file).items(dataset)[ITEM_FIELDS].sort_values("source_id", ignore_index=True)


LAYOUTS = {
    "saved": "saved",
    "parquet": "parquet",
    "one split file": "saved/dataset_dict.json",
    "push_to_hub, fingerprinted shards": "pushed_fingerprinted",
    "push_to_hub, a config per category in two shards": "pushed_configs",
    "the Hub's parquet conversion": "converted",
    "configs saved one by one": "configs",
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_saved_hugging_face_copy_imports_as_the_same_items_as_the_repository_files(
    layout, hf_copy, fixtures, tmp_path
):
    path = hf_copy / LAYOUTS[layout]
    from_hf = api.open_store(tmp_path / "hf.db").import_file("hf", path)
    from_files = api.open_store(tmp_path / "files.db").import_file("sugarcrepe-pp", fixtures / "sugarcrepe_pp" / "data")
    assert from_hf["n_items"] == from_files["n_items"] == 4757
    assert from_hf["by_category"] == from_files["by_category"]
    pd.testing.assert_frame_equal(
        stored_items(tmp_path / "hf.db", "sugarcrepe-pp"), stored_items(tmp_path / "files.db", "sugarcrepe-pp")
    )
    # its items follow SugarCrepe++'s rules (metric names, strict ties): the dataset's source is that benchmark
    assert store.get_dataset(api.open_store(tmp_path / "hf.db").db, "sugarcrepe-pp")["source_format"] == "sugarcrepe-pp"


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
    with pytest.raises(Exception, match="the Hub is switched off") as refused:
        studio.import_file("hf", "no-such-org/no-such-dataset")
    # what a foil user can do, not the library's advice to its own callers (local_files_only=False)
    assert "has no copy of no-such-org/no-such-dataset" in str(refused.value)
    assert "unset HF_HUB_OFFLINE" in str(refused.value) and "local_files_only" not in str(refused.value)
    assert studio.datasets().empty


def test_configs_saved_one_by_one_into_one_store_stay_apart(hf_copy, tmp_path):
    studio = api.open_store(tmp_path / "foil.db")
    reports = [
        studio.import_file("hf", hf_copy / "configs" / config)
        for config in ("replace_attribute", "replace_object", "swap_object")
    ]
    assert [report["by_category"] for report in reports] == [
        {"replace_att": 788},
        {"replace_obj": 1652},
        {"swap_obj": 245},
    ]
    stored = store.category_counts(studio.db, store.get_dataset(studio.db, "sugarcrepe-pp")["id"])
    assert stored == {"replace_att": 788, "replace_obj": 1652, "swap_obj": 245}


def test_an_image_column_written_as_paths_is_read_by_its_path_under_the_image_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the library stores each path as it was given
    for colour in ("red", "green"):
        (tmp_path / "coco").mkdir(exist_ok=True)
        Image.new("RGB", (4, 4), colour).save(tmp_path / "coco" / f"{colour}.png")
    rows = {
        "id": [0, 1],
        "image": ["coco/red.png", "coco/green.png"],
        "caption": ["a red cup", "a green cup"],
        "caption2": ["a cup that is red", "a cup that is green"],
        "negative_caption": ["a blue cup", "a white cup"],
    }
    part = datasets.Dataset.from_dict(rows).cast_column("image", datasets.Image())
    part.to_parquet(str(tmp_path / "copy" / "data" / "swap_object-00000-of-00001.parquet"))
    studio = api.open_store(tmp_path / "foil.db")
    report = studio.import_file("hf", tmp_path / "copy", images=tmp_path, name="paths")
    assert report["n_items"] == 2 and report["missing_images"] == 0
    assert sorted(images[0] for images in studio.items("paths")["images"]) == ["coco/green.png", "coco/red.png"]


def test_a_hub_id_imports_every_config(hf_copy, fixtures, tmp_path, monkeypatch):
    """SugarCrepe++ on the Hub: five configs with a `train` split each. No network here: the library's own
    functions read a local repository laid out and described (README's `configs`) as push_to_hub leaves it."""
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    repo = tmp_path / "repo"
    shutil.copytree(hf_copy / "pushed_configs", repo)
    card = DatasetCardData()
    MetadataConfigs(
        {config: {"data_files": [{"split": "train", "path": f"{config}/train-*"}]} for config in HF_SPLITS.values()}
    ).to_dataset_card_data(card)
    DatasetCard(f"---\n{card}\n---\n").save(str(repo / "README.md"))
    hub_id = "Aman-J/SugarCrepe_pp"
    names, load = datasets.get_dataset_config_names, datasets.load_dataset
    asked = []
    monkeypatch.setattr(datasets, "get_dataset_config_names", lambda path, **kw: asked.append(path) or names(str(repo)))
    monkeypatch.setattr(
        datasets, "load_dataset", lambda path, *a, **kw: load(str(repo), *a, cache_dir=str(tmp_path / "cache"), **kw)
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the copy in the cache: no reachability check
    monkeypatch.chdir(tmp_path)
    from_hub = api.open_store(tmp_path / "hub.db").import_file("hf", hub_id)
    from_files = api.open_store(tmp_path / "files.db").import_file("sugarcrepe-pp", fixtures / "sugarcrepe_pp" / "data")
    assert asked == [hub_id]
    assert from_hub["by_category"] == from_files["by_category"] and from_hub["n_items"] == 4757
    pd.testing.assert_frame_equal(
        stored_items(tmp_path / "hub.db", "sugarcrepe-pp"), stored_items(tmp_path / "files.db", "sugarcrepe-pp")
    )


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


@pytest.mark.parametrize("verdicts", [("negative_false", "negative_true"), ("negative_true", "negative_false")])
def test_negclip_drops_a_negative_any_batch_decided_against_in_either_order(demo_db, tmp_path, verdicts):
    """Two validate_negative batches decide one item differently: it is left out whichever batch came
    first; an item both batches keep stays."""
    dataset = "demo-sugarcrepe"
    disputed, agreed = store.list_items(demo_db, store.get_dataset(demo_db, dataset)["id"], limit=2)
    for n, verdict in enumerate(verdicts):
        spec = batches.BatchSpec(
            dataset, "validate_negative", ("ada",), overlap=1, item_ids=(disputed["id"], agreed["id"]), name=f"b{n}"
        )
        batch_id = store.get_batch(demo_db, batches.create_batch(demo_db, spec)["batch"])["id"]
        store.decide(demo_db, batch_id, disputed["id"], 0, {"answer": verdict}, by="admin")
        store.decide(demo_db, batch_id, agreed["id"], 0, {"answer": "negative_false"}, by="admin")
    report = export_negclip(demo_db, dataset, tmp_path)
    assert read_negclip(tmp_path)["title"].tolist() == [agreed["captions"][0]]
    assert report["batches"] == ["b0", "b1"]


def test_the_cache_only_switch_reaches_both_libraries_and_is_put_back(monkeypatch):
    """The libraries read HF_HUB_OFFLINE once, on import: a notebook that sets it afterwards (or a
    Hub out of reach) is obeyed through `cache_only`, which leaves both settings as it found them."""
    import datasets.config
    from huggingface_hub import constants

    from foil_studio.data.hub import cache_only

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # as imported without the variable set
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    with cache_only(True):
        assert (constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE) == (True, True)
    assert (constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE) == (False, False)
    with cache_only(False):
        assert (constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE) == (False, False)

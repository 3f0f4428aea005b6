"""The seed benchmarks' Hub copies, written by `datasets` itself as the Hub holds them, imported with
`import hf` and compared with the benchmark's own files; and what goes wrong on the way in
(aggregate configs, README configs, absolute image paths, two splits of one category, messages)."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from foil_studio import api
from foil_studio.cli.main import main
from foil_studio.data import store
from foil_studio.data.formats import BadInputError
from foil_studio.data.formats.winoground import sample_winoground

datasets = pytest.importorskip("datasets")  # the copies are written with the library itself

FIELDS = ["kind", "category", "source_id", "captions", "truth"]


def png(colour: str | tuple[int, int, int], size: tuple[int, int] = (4, 4)) -> dict[str, object]:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, "PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def pushed(part, repo: Path, split: str = "test", shards: int = 1, data_dir: str = "data") -> Path:
    """The parquet files push_to_hub uploads for one split, its shards contiguous."""
    for index in range(shards):
        shard = part.shard(num_shards=shards, index=index, contiguous=True)
        shard.to_parquet(str(repo / data_dir / f"{split}-{index:05d}-of-{shards:05d}.parquet"))
    return repo


def items(db_file: Path, dataset: str, fields=FIELDS) -> pd.DataFrame:
    frame = api.open_store(db_file).items(dataset)[fields]
    return frame.sort_values(["category", "source_id"], ignore_index=True)


# --- Winoground -----------------------------------------------------------------------------------


def test_winogrounds_hub_copy_imports_as_its_examples_file(tmp_path):
    source = sample_winoground(tmp_path / "source", n=9)
    examples = [json.loads(line) for line in source.read_text().splitlines()]
    colours = ["red", "green", "blue", "white", "black", "yellow", "gray", "purple", "orange"]
    rows = [
        {**{k: v for k, v in e.items() if k not in ("image_0", "image_1")}, "image_0": png(c), "image_1": png(c)}
        for e, c in zip(examples, colours, strict=False)
    ]
    features = datasets.Features(
        {
            "id": datasets.Value("int32"),
            "image_0": datasets.Image(),
            "image_1": datasets.Image(),
            "caption_0": datasets.Value("string"),
            "caption_1": datasets.Value("string"),
            "tag": datasets.Value("string"),
            "secondary_tag": datasets.Value("string"),
            "num_main_preds": datasets.Value("int32"),
            "collapsed_tag": datasets.Value("string"),
        }
    )
    copy = pushed(datasets.Dataset.from_list(rows, features=features), tmp_path / "winoground", shards=2)
    from_hub = api.open_store(tmp_path / "hub.db").import_file("hf", copy)
    from_file = api.open_store(tmp_path / "file.db").import_file("winoground", source)
    assert from_hub["by_category"] == from_file["by_category"] and from_hub["n_items"] == len(examples)
    fields = [*FIELDS, "meta"]
    pd.testing.assert_frame_equal(
        items(tmp_path / "hub.db", "winoground", fields), items(tmp_path / "file.db", "winoground", fields)
    )
    db = api.open_store(tmp_path / "hub.db").db
    assert store.get_dataset(db, "winoground")["source_format"] == "winoground"  # scored by Winoground's rules


# --- SugarCrepe -----------------------------------------------------------------------------------


def m4_copy(fixtures: Path, category: str, repo: Path) -> Path:
    """HuggingFaceM4/SugarCrepe_{category} as its authors pushed it: the two captions in `tested_labels`
    (in no fixed order), `true_label` a ClassLabel over every caption."""
    records = json.loads((fixtures / "sugarcrepe" / "data" / f"{category}.json").read_text())
    shuffle = random.Random(7)
    tested = [shuffle.sample([r["caption"], r["negative_caption"]], 2) for r in records.values()]
    names = sorted({caption for pair in tested for caption in pair})
    features = datasets.Features(
        {
            "image": datasets.Image(),
            "tested_labels": datasets.Sequence(datasets.Value("string")),
            "true_label": datasets.ClassLabel(names=names),
        }
    )
    rows = [
        {"image": png((n % 256, 0, 0)), "tested_labels": pair, "true_label": r["caption"]}
        for n, (pair, r) in enumerate(zip(tested, records.values(), strict=True))
    ]
    return pushed(datasets.Dataset.from_list(rows, features=features), repo)


def test_huggingfacem4s_sugarcrepe_copies_import_with_their_category_as_the_authors_files(fixtures, tmp_path):
    studio = api.open_store(tmp_path / "hub.db")
    with pytest.raises(BadInputError, match="--category swap_att"):
        studio.import_file("hf", m4_copy(fixtures, "swap_att", tmp_path / "swap_att"))
    for category in ("swap_att", "replace_rel"):
        report = studio.import_file("hf", m4_copy(fixtures, category, tmp_path / category), category=category)
        assert report["by_category"] == {
            category: len(json.loads((fixtures / "sugarcrepe" / "data" / f"{category}.json").read_text()))
        }
    own = api.open_store(tmp_path / "file.db")
    for category in ("swap_att", "replace_rel"):
        own.import_file("sugarcrepe", fixtures / "sugarcrepe" / "data" / f"{category}.json")
    # the same items (caption first, the negative second) under the same ids, whatever order tested_labels held
    pd.testing.assert_frame_equal(items(tmp_path / "hub.db", "sugarcrepe"), items(tmp_path / "file.db", "sugarcrepe"))


def test_a_sugarcrepe_copy_with_a_split_per_category_imports_as_the_authors_pairs(fixtures, tmp_path):
    source = fixtures / "sugarcrepe" / "data"
    parts = {}
    for category in ("add_att", "swap_obj"):
        records = json.loads((source / f"{category}.json").read_text())
        parts[category] = datasets.Dataset.from_list(
            [
                {"image": png("red"), "caption": r["caption"], "negative_caption": r["negative_caption"]}
                for r in records.values()
            ],
            features=datasets.Features(
                {
                    "image": datasets.Image(),
                    "caption": datasets.Value("string"),
                    "negative_caption": datasets.Value("string"),
                }
            ),
        )
    datasets.DatasetDict(parts).save_to_disk(str(tmp_path / "saved"))
    report = api.open_store(tmp_path / "hub.db").import_file("hf", tmp_path / "saved")
    own = api.open_store(tmp_path / "file.db")
    for category in parts:
        own.import_file("sugarcrepe", source / f"{category}.json")
    assert report["by_category"] == {c: len(p) for c, p in parts.items()}
    # the same pairs; ids are places in the split, which are the authors' keys only where those run 0, 1, 2...
    # (swap_obj's skip 108, so from there on its keys are one more than the row's place)
    content = ["kind", "category", "captions", "truth"]
    hub, file = (items(tmp_path / f"{n}.db", "sugarcrepe") for n in ("hub", "file"))
    for frame in (hub, file):
        frame["text"] = frame["captions"].map(tuple)
    pd.testing.assert_frame_equal(
        hub.sort_values(["category", "text"], ignore_index=True)[content],
        file.sort_values(["category", "text"], ignore_index=True)[content],
    )
    assert (hub["source_id"] == file["source_id"])[hub["category"] == "add_att"].all()


def test_sugarcrepe_pp_splits_spelt_two_ways_are_refused_not_merged(tmp_path):
    part = datasets.Dataset.from_list(
        [
            {
                "id": 0,
                "image": png("red"),
                "caption": "a red cup",
                "caption2": "a cup, red",
                "negative_caption": "a blue cup",
            }
        ]
    )
    datasets.DatasetDict({"swap_atribute": part, "swap_attribute": part}).save_to_disk(str(tmp_path / "copy"))
    with pytest.raises(BadInputError, match="would both be category 'swap_att'"):
        api.open_store(tmp_path / "foil.db").import_file("hf", tmp_path / "copy")


# --- BiVLC ----------------------------------------------------------------------------------------


def test_bivlcs_hub_copy_imports_its_test_split_and_the_authors_results_attach_to_it(fixtures, tmp_path):
    """The authors' per-instance results were written row by row from the Hub's test split (their image
    column holds the PIL objects' text): the copy rebuilt from those rows, with small images, imports as
    the same 2,933 instances, and their results file then adds no item and gives the published scores."""
    results = fixtures / "bivlc" / "results" / "BiVLC_ViT-B-32.csv"
    with results.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    table = datasets.Dataset.from_list(
        [
            {
                "image": png((n % 256, 1, 1)),
                "caption": r["caption"],
                "negative_caption": r["negative_caption"],
                "negative_image": png((n % 256, 2, 2)),
                "type": r["type"],
                "subtype": r["subtype"],
            }
            for n, r in enumerate(rows)
        ],
        features=datasets.Features(
            {
                "image": datasets.Image(),
                "caption": datasets.Value("string"),
                "negative_caption": datasets.Value("string"),
                "negative_image": datasets.Image(),
                "type": datasets.Value("string"),
                "subtype": datasets.Value("string"),
            }
        ),
    )
    copy = pushed(table, tmp_path / "bivlc", shards=2)
    studio = api.open_store(tmp_path / "hub.db")
    report = studio.import_file("hf", copy)
    assert report["n_items"] == len(rows) == 2933
    own = api.open_store(tmp_path / "file.db").import_file("bivlc-results", results)
    assert report["by_category"] == own["by_category"]
    hub_items = items(tmp_path / "hub.db", "bivlc")
    own_items = items(tmp_path / "file.db", "bivlc")
    pd.testing.assert_frame_equal(
        hub_items[["category", "source_id", "captions"]], own_items[["category", "source_id", "captions"]]
    )


# --- ARO ------------------------------------------------------------------------------------------


def aro_rows() -> list[dict[str, object]]:
    box = {"x": 2.0, "y": 3.0, "w": 5.0, "h": 4.0}
    return [
        # the box already cut out (5x4), and the whole picture that holds it (10x9)
        {
            "image": png("red", (5, 4)),
            "true_caption": "the cup is on the table",
            "false_caption": "the table is on the cup",
            "relation_name": "on",
            "bbox": box,
        },
        {
            "image": png("blue", (10, 9)),
            "true_caption": "the dog is near the cat",
            "false_caption": "the cat is near the dog",
            "relation_name": "near",
            "bbox": box,
        },
    ]


def test_aros_hub_copy_is_cropped_only_where_its_image_is_the_whole_picture(tmp_path):
    pushed(datasets.Dataset.from_list(aro_rows()), tmp_path / "aro")
    report = api.open_store(tmp_path / "foil.db").import_file("hf", tmp_path / "aro")
    assert report["by_category"] == {"near": 1, "on": 1}
    stored = api.open_store(tmp_path / "foil.db").items("aro").set_index("category")
    assert stored.loc["on", "meta"]["bbox"] == [] and stored.loc["on", "meta"]["hub_bbox"] == [2.0, 3.0, 5.0, 4.0]
    assert stored.loc["near", "meta"]["bbox"] == [2.0, 3.0, 5.0, 4.0]  # cropped when scored, as ARO's loader does
    assert stored["source_id"].tolist() == ["visual_genome_relation/1", "visual_genome_relation/2"]


def test_an_aro_image_that_is_neither_its_box_nor_a_picture_holding_it_is_refused(tmp_path):
    rows = aro_rows()
    rows[1]["image"] = png("blue", (10, 5))  # wide enough for the box at x = 2, too low for it at y = 3
    pushed(datasets.Dataset.from_list(rows), tmp_path / "aro")
    with pytest.raises(BadInputError, match=r"row 2: image is 10x5, neither its box 5x4 nor a picture holding the box"):
        api.open_store(tmp_path / "foil.db").import_file("hf", tmp_path / "aro")


# --- layouts: aggregates, README configs, image paths ---------------------------------------------


@pytest.fixture
def scpp_configs(fixtures):
    source = fixtures / "sugarcrepe_pp" / "data"
    return {f.stem: datasets.Dataset.from_list(json.loads(f.read_text())) for f in sorted(source.glob("*.json"))}


def test_an_all_config_beside_the_others_is_skipped_and_said(scpp_configs, tmp_path):
    for config, part in scpp_configs.items():
        part.to_parquet(str(tmp_path / "converted" / config / "test" / "0000.parquet"))
    everything = datasets.concatenate_datasets(list(scpp_configs.values()))
    everything.to_parquet(str(tmp_path / "converted" / "all" / "test" / "0000.parquet"))
    report = api.open_store(tmp_path / "foil.db").import_file("hf", tmp_path / "converted")
    assert report["n_items"] == sum(len(p) for p in scpp_configs.values()) == 4757
    assert "all" not in report["by_category"]
    assert any(
        "config 'all' holds every other config's rows together: skipped" in w["message"] for w in report["warnings"]
    )
    # asked for alone, the aggregate is read, and its rows' repeated ids (each config numbers its own) said
    with pytest.raises(BadInputError, match=r"row 789 and .* row 1 are both item 'all/0' of category 'all'"):
        api.open_store(tmp_path / "alone.db").import_file("hf", tmp_path / "converted" / "all")


def test_a_readme_configs_section_maps_freely_named_files(scpp_configs, tmp_path):
    repo = tmp_path / "repo"
    for config, part in scpp_configs.items():
        part.to_parquet(str(repo / "data" / f"{config}.parquet"))
    header = {
        "configs": [
            {"config_name": c, "data_files": [{"split": "test", "path": f"data/{c}.parquet"}]} for c in scpp_configs
        ]
    }
    import yaml

    (repo / "README.md").write_text(f"---\n{yaml.safe_dump(header)}---\n# SugarCrepe++\n")
    # the library itself reads the repository this way
    assert sorted(datasets.get_dataset_config_names(str(repo))) == sorted(scpp_configs)
    report = api.open_store(tmp_path / "foil.db").import_file("hf", repo)
    assert report["n_items"] == 4757 and sorted(report["by_category"]) == sorted(scpp_configs)


def cups(paths: list[str]):
    rows = {
        "id": list(range(len(paths))),
        "image": paths,
        "caption": ["a red cup"] * len(paths),
        "caption2": ["a cup that is red"] * len(paths),
        "negative_caption": ["a blue cup"] * len(paths),
    }
    return datasets.Dataset.from_dict(rows).cast_column("image", datasets.Image())


def test_absolute_image_paths_inside_the_image_root_are_taken_relative_to_it(tmp_path):
    (tmp_path / "imgs" / "sub").mkdir(parents=True)
    for n in range(2):
        Image.new("RGB", (4, 4), "red").save(tmp_path / "imgs" / "sub" / f"{n}.png")
    absolute = [str(tmp_path / "imgs" / "sub" / f"{n}.png") for n in range(2)]
    cups(absolute).to_parquet(str(tmp_path / "copy" / "data" / "swap_object-00000-of-00001.parquet"))
    studio = api.open_store(tmp_path / "foil.db")
    report = studio.import_file("hf", tmp_path / "copy", images=tmp_path / "imgs")
    assert report["n_items"] == 2 and report["missing_images"] == 0
    assert sorted(i[0] for i in studio.items("sugarcrepe-pp")["images"]) == ["sub/0.png", "sub/1.png"]
    with pytest.raises(BadInputError, match=r"row 1: image path .*sub/0\.png' is outside the image root .*other"):
        (tmp_path / "other").mkdir()
        api.open_store(tmp_path / "other.db").import_file("hf", tmp_path / "copy", images=tmp_path / "other")


# --- messages and what a failed import leaves -----------------------------------------------------


def test_a_mistyped_local_folder_is_not_taken_for_a_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    with pytest.raises(BadInputError, match=r"no such file or folder \(in data, which exists"):
        api.open_store(tmp_path / "foil.db").import_file("hf", "data/scpp")


def test_a_failed_import_leaves_no_new_store_file_and_an_existing_store_untouched(tmp_path, capsys):
    new = tmp_path / "new.db"
    assert main(["import", "hf", str(tmp_path / "missing"), "--db", str(new)]) == 1
    assert "no such file or folder" in capsys.readouterr().err
    assert not new.exists() and not list(tmp_path.glob("new.db*"))
    kept = tmp_path / "kept.db"
    store.open_db(kept).conn.close()
    assert main(["import", "hf", str(tmp_path / "missing"), "--db", str(kept)]) == 1
    assert kept.exists()  # a store that was there before the command stays


def test_category_is_refused_for_a_format_that_names_its_categories(fixtures, tmp_path):
    with pytest.raises(BadInputError, match="--category is for hf"):
        api.open_store(tmp_path / "foil.db").import_file(
            "sugarcrepe", fixtures / "sugarcrepe" / "data" / "swap_att.json", category="x"
        )


def test_an_absolute_readme_pattern_is_refused_in_one_line(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text(
        "---\nconfigs:\n- config_name: swap_obj\n  data_files:\n  - split: test\n    path: /data/*.parquet\n---\n"
    )
    with pytest.raises(BadInputError, match=r"data_files pattern '/data/\*\.parquet'.*expected a path inside"):
        api.open_store(tmp_path / "foil.db").import_file("hf", repo)

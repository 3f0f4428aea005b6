"""The seed benchmarks' Hub copies, written by `datasets` itself as the Hub holds them, imported with
`import hf` and compared with the benchmark's own files: their items, and the benchmark's published metrics
(computed by foil's metric code, `foil metrics`) of one model's run on both imports; and what goes wrong on the
way in (aggregate configs, README configs, absolute image paths, two splits of one category, messages)."""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import random
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from foil_studio import api
from foil_studio.cli.main import main
from foil_studio.data import demo_world, store
from foil_studio.data.formats import BadInputError
from foil_studio.data.formats.winoground import write_winoground_source

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


# Few colours, so that a copy of thousands of rows holds few distinct pictures (scoring encodes each once).
PALETTE = [(r, g, b) for r in (0, 128, 255) for g in (0, 128, 255) for b in (0, 255)]


def swatch(name: str) -> dict[str, object]:
    """The small picture standing for the image file `name`: the same in the Hub copy's rows and in
    the folder beside the benchmark's own files (`swatches`), so both imports are scored on the same pixels."""
    return {"bytes": palette_png(hashlib.sha256(name.encode()).digest()[0] % len(PALETTE)), "path": None}


@functools.cache
def palette_png(index: int) -> bytes:
    return png(PALETTE[index])["bytes"]


def swatches(folder: Path, names) -> Path:
    """An image folder for the benchmark's own files: each named image as its swatch."""
    for name in set(names):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(swatch(name)["bytes"])
    return folder


@pytest.fixture(scope="module")
def demo_model():
    """The shipped demo CLIP, on the CPU in fp32: one model scores both imports."""
    from foil_studio.analysis.models import demo_model_spec, load_model

    return load_model(demo_model_spec(), device="cpu")


# Items the demo model scores in each import of a copy of thousands of rows: the first stored, which both imports
# store in the same order (encoding every caption would take the suite seconds per thousand).
SCORED = 200


def demo_run(studio: api.Studio, dataset: str, model, limit: int | None = None) -> tuple[dict, pd.DataFrame]:
    """Score `dataset` (its first `limit` items) with `model` and read the run back as `foil metrics`
    does: the benchmark's published metrics, overall and per category (and type), with their n and
    ties, but not the bootstrap intervals, which follow the order the items were stored in; and each
    scored item's outcome and score gaps, by its category, source id and captions."""
    from foil_studio.analysis.scoring import score_dataset

    score_dataset(studio.db, dataset, model, run="demo", limit=limit)
    return run_figures(studio, dataset, "demo")


def run_figures(studio: api.Studio, dataset: str, run: str) -> tuple[dict, pd.DataFrame]:
    """A stored run's metrics (as `demo_run`) and per-item results, whatever ids the items got."""
    summary = studio.metrics(dataset, run)
    figures = {k: v for k, v in summary.items() if k != "dataset" and "intervals" not in k}
    per_item = studio.results(dataset, run)
    stored = store.items_by_id(studio.db, per_item["item"].tolist())
    per_item["source_id"] = [stored[i]["source_id"] for i in per_item["item"]]
    per_item["captions"] = [tuple(stored[i]["captions"]) for i in per_item["item"]]
    return figures, per_item.drop(columns="item").sort_values(["category", "captions"], ignore_index=True)


def informative(figures: dict, metric: str) -> float:
    """`metric` over all items, checked to be neither 0 nor 100: a figure the items decide."""
    value = figures["metrics"][metric]
    assert 0 < value < 100, (metric, value)
    return value


# --- Winoground -----------------------------------------------------------------------------------


def winoground_pair(number: int) -> dict[str, object]:
    """Example `number`'s captions and pictures, drawn in the demo model's world so that its scores
    mean something: two shapes side by side, their colours swapped between the two pictures and the
    two captions (the same words in another order, as Winoground's)."""
    draw = random.Random(number)
    shapes, colours = draw.sample(demo_world.SHAPES, 2), draw.sample(sorted(demo_world.COLOURS), 2)
    pair: dict[str, object] = {}
    for side, (first, second) in enumerate((colours, colours[::-1])):
        scene = (
            demo_world.Thing(shapes[0], first, "large", 36, 64),
            demo_world.Thing(shapes[1], second, "large", 92, 64),
        )
        buffer = io.BytesIO()
        demo_world.draw(scene, size=64).save(buffer, "PNG")
        pair[f"image_{side}"] = {"bytes": buffer.getvalue(), "path": None}
        claim = demo_world.Claim(
            (demo_world.Desc(shapes[0], first), demo_world.Desc(shapes[1], second)), (0, "left of", 1)
        )
        pair[f"caption_{side}"] = demo_world.render(claim)
    return pair


def test_winogrounds_hub_copy_imports_as_its_examples_file(tmp_path, demo_model):
    """Every item field and `meta` as `import winoground` of the same examples with their images
    (`{image}.png`, the pictures the copy embeds); scored by the demo model, the same text, image and
    group scores per collapsed tag (and ties), and each item's outcome and score gaps."""
    source = write_winoground_source(tmp_path / "source", n=30)
    examples = [{**json.loads(line), "caption_0": "", "caption_1": ""} for line in source.read_text().splitlines()]
    rows = []
    (tmp_path / "images").mkdir()
    for example in examples:
        pair = winoground_pair(example["id"])
        for side in (0, 1):
            example[f"caption_{side}"] = pair[f"caption_{side}"]
            (tmp_path / "images" / f"{example[f'image_{side}']}.png").write_bytes(pair[f"image_{side}"]["bytes"])
        rows.append({**example, "image_0": pair["image_0"], "image_1": pair["image_1"]})
    source.write_text("".join(json.dumps(example) + "\n" for example in examples))
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
    hub, own = api.open_store(tmp_path / "hub.db"), api.open_store(tmp_path / "file.db")
    from_hub = hub.import_file("hf", copy)
    from_file = own.import_file("winoground", source, images=tmp_path / "images")
    assert from_hub["by_category"] == from_file["by_category"] and from_hub["n_items"] == len(examples)
    assert from_file["missing_images"] == 0
    fields = [*FIELDS, "meta"]
    pd.testing.assert_frame_equal(
        items(tmp_path / "hub.db", "winoground", fields), items(tmp_path / "file.db", "winoground", fields)
    )
    assert store.get_dataset(hub.db, "winoground")["source_format"] == "winoground"  # scored by Winoground's rules
    (hub_figures, hub_items), (own_figures, own_items) = (demo_run(s, "winoground", demo_model) for s in (hub, own))
    assert hub_figures == own_figures
    pd.testing.assert_frame_equal(hub_items, own_items)
    for metric in ("text", "image", "group"):
        informative(hub_figures, metric)


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
        {"image": swatch(r["filename"]), "tested_labels": pair, "true_label": r["caption"]}
        for pair, r in zip(tested, records.values(), strict=True)
    ]
    return pushed(datasets.Dataset.from_list(rows, features=features), repo)


def test_huggingfacem4s_sugarcrepe_copies_import_with_their_category_as_the_authors_files(
    fixtures, tmp_path, demo_model
):
    """Every item, under the same ids, as the authors' files (imported into the same store, so that
    scoring the second reads the first's embeddings); the first `SCORED` items (swap_att's) scored by
    the demo model, each COCO image a swatch chosen by its file name, the same in the copy and beside
    the files (only theirs are written there): the same accuracy (and ties), and each item's outcome and
    score gap."""
    source = fixtures / "sugarcrepe" / "data"
    records = {c: json.loads((source / f"{c}.json").read_text()) for c in ("swap_att", "replace_rel")}
    studio = api.open_store(tmp_path / "foil.db")
    with pytest.raises(BadInputError, match="--category swap_att"):
        studio.import_file("hf", m4_copy(fixtures, "swap_att", tmp_path / "swap_att"))
    images = swatches(tmp_path / "coco", [r["filename"] for r in list(records["swap_att"].values())[:SCORED]])
    for category, part in records.items():
        report = studio.import_file("hf", m4_copy(fixtures, category, tmp_path / category), category=category)
        assert report["by_category"] == {category: len(part)}
        studio.import_file("sugarcrepe", source / f"{category}.json", images=images, name="own")
    # the same items (caption first, the negative second) under the same ids, whatever order tested_labels held
    pd.testing.assert_frame_equal(items(tmp_path / "foil.db", "sugarcrepe"), items(tmp_path / "foil.db", "own"))
    (hub_figures, hub_items), (own_figures, own_items) = (
        demo_run(studio, name, demo_model, limit=SCORED) for name in ("sugarcrepe", "own")
    )
    assert hub_figures == own_figures and hub_figures["by_category"]["swap_att"]["n"] == SCORED
    pd.testing.assert_frame_equal(hub_items, own_items)
    informative(hub_figures, "accuracy_micro")


def test_a_sugarcrepe_copy_with_a_split_per_category_imports_as_the_authors_pairs(fixtures, tmp_path, demo_model):
    """The same pairs as the authors' files (imported into the same store); the first `SCORED` (add_att's:
    the splits are read in the order of their names) scored by the demo model, images as swatches chosen
    by file name as for HuggingFaceM4's copies: the same accuracy (and ties), and each pair's outcome
    and score gap."""
    source = fixtures / "sugarcrepe" / "data"
    records = {c: json.loads((source / f"{c}.json").read_text()) for c in ("add_att", "swap_obj")}
    parts = {
        category: datasets.Dataset.from_list(
            [
                {"image": swatch(r["filename"]), "caption": r["caption"], "negative_caption": r["negative_caption"]}
                for r in part.values()
            ],
            features=datasets.Features(
                {
                    "image": datasets.Image(),
                    "caption": datasets.Value("string"),
                    "negative_caption": datasets.Value("string"),
                }
            ),
        )
        for category, part in records.items()
    }
    datasets.DatasetDict(parts).save_to_disk(str(tmp_path / "saved"))
    studio = api.open_store(tmp_path / "foil.db")
    report = studio.import_file("hf", tmp_path / "saved")
    images = swatches(tmp_path / "coco", [r["filename"] for r in list(records["add_att"].values())[:SCORED]])
    for category in parts:
        studio.import_file("sugarcrepe", source / f"{category}.json", images=images, name="own")
    assert report["by_category"] == {c: len(p) for c, p in parts.items()}
    # the same pairs; ids are places in the split, which are the authors' keys only where those run 0, 1, 2...
    # (swap_obj's skip 108, so from there on its keys are one more than the row's place)
    content = ["kind", "category", "captions", "truth"]
    hub, file = (items(tmp_path / "foil.db", name) for name in ("sugarcrepe", "own"))
    for frame in (hub, file):
        frame["text"] = frame["captions"].map(tuple)
    pd.testing.assert_frame_equal(
        hub.sort_values(["category", "text"], ignore_index=True)[content],
        file.sort_values(["category", "text"], ignore_index=True)[content],
    )
    assert (hub["source_id"] == file["source_id"])[hub["category"] == "add_att"].all()
    (hub_figures, hub_items), (own_figures, own_items) = (
        demo_run(studio, name, demo_model, limit=SCORED) for name in ("sugarcrepe", "own")
    )
    assert hub_figures == own_figures and hub_figures["by_category"]["add_att"]["n"] == SCORED
    pd.testing.assert_frame_equal(hub_items, own_items)
    informative(hub_figures, "accuracy_micro")


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
    the same 2,933 instances (categories, source ids and captions), and their results file then adds no
    item and gives the same published I2T, T2I and group scores (overall, per type and per subtype, with
    the four directional ones) as imported on its own, group by group. The copy's images are not the
    authors' (the results file holds none), so no model scores it."""
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
    own = api.open_store(tmp_path / "file.db")
    from_results = own.import_file("bivlc-results", results)
    assert report["by_category"] == from_results["by_category"]
    hub_items = items(tmp_path / "hub.db", "bivlc")
    own_items = items(tmp_path / "file.db", "bivlc")
    pd.testing.assert_frame_equal(
        hub_items[["category", "source_id", "captions"]], own_items[["category", "source_id", "captions"]]
    )
    # the authors' results attach to the copy's groups, adding none, and read as on their own
    attached = studio.import_file("bivlc-results", results)
    assert attached["n_new_items"] == 0 and attached["run"] == (run := from_results["run"])
    (hub_figures, hub_results), (own_figures, own_results) = (run_figures(s, "bivlc", run) for s in (studio, own))
    assert hub_figures == own_figures
    pd.testing.assert_frame_equal(hub_results, own_results)
    for metric in ("i2t", "t2i", "group"):
        informative(hub_figures, metric)
    assert sorted(hub_figures["by_type"]) == ["add", "replace", "swap"]


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


def scpp_compared(studio: api.Studio, fixtures: Path, images: Path, demo_model) -> dict:
    """The authors' files imported beside the copy's `sugarcrepe-pp` (as `own`, in the same store): the
    same items under the same ids and image paths, and the first `SCORED` (replace_att's, whose COCO images
    alone are in `images`, each a swatch chosen by its file name) scored by the demo model: the same ITT,
    Image-P1-Neg, Image-P2-Neg and TOT (and ties), and each item's outcome and score gaps. Returns the
    copy's metrics."""
    studio.import_file("sugarcrepe-pp", fixtures / "sugarcrepe_pp" / "data", images=images, name="own")
    db = store.location(studio.db)
    pd.testing.assert_frame_equal(
        items(db, "sugarcrepe-pp", [*FIELDS, "images"]), items(db, "own", [*FIELDS, "images"])
    )
    (hub_figures, hub_items), (own_figures, own_items) = (
        demo_run(studio, name, demo_model, limit=SCORED) for name in ("sugarcrepe-pp", "own")
    )
    assert hub_figures == own_figures and hub_figures["by_category"]["replace_att"]["n"] == SCORED
    pd.testing.assert_frame_equal(hub_items, own_items)
    for metric in ("ITT", "TOT"):
        informative(hub_figures, metric)
    return hub_figures


def test_an_all_config_beside_the_others_is_skipped_and_said(fixtures, scpp_configs, tmp_path, demo_model):
    """Every config but `all`, as the authors' files, with the same metrics (`scpp_compared`); `all`
    asked for alone is refused for its repeated ids."""
    for config, part in scpp_configs.items():
        part.to_parquet(str(tmp_path / "converted" / config / "test" / "0000.parquet"))
    everything = datasets.concatenate_datasets(list(scpp_configs.values()))
    everything.to_parquet(str(tmp_path / "converted" / "all" / "test" / "0000.parquet"))
    images = swatches(tmp_path / "coco", scpp_configs["replace_att"]["filename"][:SCORED])
    studio = api.open_store(tmp_path / "foil.db")
    report = studio.import_file("hf", tmp_path / "converted", images=images)
    assert report["n_items"] == sum(len(p) for p in scpp_configs.values()) == 4757
    assert "all" not in report["by_category"]
    assert any(
        "config 'all' holds every other config's rows together: skipped" in w["message"] for w in report["warnings"]
    )
    scpp_compared(studio, fixtures, images, demo_model)
    # asked for alone, the aggregate is read, and its rows' repeated ids (each config numbers its own) said
    with pytest.raises(BadInputError, match=r"row 789 and .* row 1 are both item 'all/0' of category 'all'"):
        api.open_store(tmp_path / "alone.db").import_file("hf", tmp_path / "converted" / "all")


def test_a_readme_configs_section_maps_freely_named_files(fixtures, scpp_configs, tmp_path, demo_model):
    """The configs `datasets` reads from the README, as the authors' files, with the same metrics (`scpp_compared`)."""
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
    images = swatches(tmp_path / "coco", scpp_configs["replace_att"]["filename"][:SCORED])
    studio = api.open_store(tmp_path / "foil.db")
    report = studio.import_file("hf", repo, images=images)
    assert report["n_items"] == 4757 and sorted(report["by_category"]) == sorted(scpp_configs)
    scpp_compared(studio, fixtures, images, demo_model)


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
